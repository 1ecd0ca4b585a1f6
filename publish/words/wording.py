"""Sentences more than one published artefact must say identically.

Kept in one place so the site, the Datasette metadata and the release notes
cannot say two different things about what a number means.
"""

PROJECT = "LLM-Archive"

ONE_SENTENCE = (
    "LLM-Archive keeps a dated, checkable record of whether a language model gives the same decision when "
    "a question is reworded without changing what it asks."
)

SCOPE = (
    "Every number here is about one frozen panel of 15 scenarios, one model and one day. It is never a "
    "statement about the model in general or about wording effects in general."
)

NO_ONE_MAY_CONCLUDE = (
    "What nobody may conclude from a comparison point: that a model beats other models, or beats AI in "
    "general. Each row is one model, measured on one frozen 15-scenario panel, on one day. It ranks "
    "nothing and says nothing beyond that panel and that day."
)

NOT_AN_EVALUATION = (
    "This is a research record, not a product evaluation, a ranking or a certification: no number here is "
    "a reason to buy, use or trust a model."
)

LICENCES = {
    "data": ("CC-BY-4.0", "https://creativecommons.org/licenses/by/4.0/"),
    "prose": ("CC-BY-SA-4.0", "https://creativecommons.org/licenses/by-sa/4.0/"),
    "code": ("AGPL-3.0", "https://www.gnu.org/licenses/agpl-3.0.html"),
}
