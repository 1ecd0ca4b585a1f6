"""Which model the commercial series follows: the subject-model file and the review of undeclared successors."""
