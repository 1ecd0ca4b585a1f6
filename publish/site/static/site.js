(function(){
'use strict';
var root=document.documentElement;root.classList.add('js');
var pages=[].slice.call(document.querySelectorAll('section.page'));
var tabs=[].slice.call(document.querySelectorAll('header nav a[data-tab]'));
var header=document.querySelector('body>header');
// Anchored elements keep clear of the sticky header, whose height depends on how its links wrap.
function headerHeight(){root.style.setProperty('--header-h',Math.ceil(header.getBoundingClientRect().height)+'px');}
headerHeight();window.addEventListener('resize',headerHeight);
function show(id){
  var found=false;
  pages.forEach(function(p){var on=p.id===id;p.classList.toggle('active',on);if(on){found=true;}});
  if(!found){pages[0].classList.add('active');id=pages[0].id;}
  tabs.forEach(function(t){if(t.getAttribute('data-tab')===id){t.setAttribute('aria-current','page');}else{t.removeAttribute('aria-current');}});
}
// A page's id shows that page from its top; any other id inside a page shows its page and scrolls to it.
function fromHash(){
  var id=decodeURIComponent((location.hash||'#home').slice(1)),target=id?document.getElementById(id):null;
  var page=target&&target.closest?target.closest('section.page'):null;
  if(page&&page!==target){show(page.id);headerHeight();target.scrollIntoView({block:'start'});return;}
  show(id);window.scrollTo(0,0);
}
window.addEventListener('hashchange',fromHash);
fromHash();
window.addEventListener('load',function(){if(location.hash){fromHash();}});

// Narrow screens read each table row as a card: every cell carries its column's name.
[].forEach.call(document.querySelectorAll('section.page table'),function(table){
  var heads=[].map.call(table.querySelectorAll('thead th'),function(th){return th.textContent.trim();});
  if(!heads.length){return;}
  table.classList.add('cards');
  [].forEach.call(table.tBodies,function(tb){[].forEach.call(tb.rows,function(tr){
    [].forEach.call(tr.cells,function(td,i){if(heads[i]&&!td.hasAttribute('data-label')){td.setAttribute('data-label',heads[i]);}});
  });});
});

function sortBy(th){
  var table=th.closest('table'),tbody=table.tBodies[0],index=[].indexOf.call(th.parentNode.children,th);
  var numeric=th.getAttribute('data-type')==='num';
  var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
  [].forEach.call(th.parentNode.children,function(h){h.removeAttribute('aria-sort');});
  th.setAttribute('aria-sort',dir===1?'ascending':'descending');
  var rows=[].slice.call(tbody.rows);
  rows.sort(function(a,b){
    var x=a.cells[index].getAttribute('data-v'),y=b.cells[index].getAttribute('data-v');
    if(numeric){var fx=x===''?-Infinity:parseFloat(x),fy=y===''?-Infinity:parseFloat(y);return (fx-fy)*dir;}
    return x.localeCompare(y)*dir;
  });
  rows.forEach(function(r){tbody.appendChild(r);});
}
[].forEach.call(document.querySelectorAll('table.sortable th[data-type]'),function(th){
  th.tabIndex=0;
  th.addEventListener('click',function(){sortBy(th);});
  th.addEventListener('keydown',function(ev){if(ev.key==='Enter'){sortBy(th);}});
});

var data=JSON.parse(document.getElementById('drawer-data').textContent);
var human=JSON.parse(document.getElementById('human-data').textContent);
var drawer=document.getElementById('drawer'),body=document.getElementById('drawer-body');
var opener=null;
function el(tag,text,cls){var n=document.createElement(tag);if(text!==undefined&&text!==null){n.textContent=String(text);}if(cls){n.className=cls;}return n;}
function fmt(v,d){if(v===null||v===undefined){return '—';}if(typeof v==='number'){return v.toFixed(d===undefined?1:d);}if(typeof v==='boolean'){return v?'true':'false';}return String(v);}
function rounded(text){return String(text).replace(/-?\d+\.\d{3,}/g,function(num,at,all){var name=all.slice(0,at);name=name.slice(name.lastIndexOf(',')+1);return parseFloat(num).toFixed(name.indexOf('entropy')>=0?2:1);});}
function kv(list,label,value){var dt=el('dt',label);var dd=el('dd',value);list.appendChild(dt);list.appendChild(dd);}
function grid(title,obj,cols){
  body.appendChild(el('h3',title));
  var t=el('table'),head=el('tr');head.appendChild(el('th',''));cols.forEach(function(c){head.appendChild(el('th',c));});
  t.appendChild(head);
  Object.keys(obj||{}).forEach(function(k){var tr=el('tr');tr.appendChild(el('th',k));cols.forEach(function(c){tr.appendChild(el('td',fmt((obj[k]||{})[c],0)));});t.appendChild(tr);});
  var wrap=el('div',null,'scroll');wrap.appendChild(t);body.appendChild(wrap);
}
function open(runId,row){
  var m=data[runId];if(!m){return;}
  opener=row;body.textContent='';
  body.appendChild(el('h2',m.protocol_id));
  if(m.point_kind){
    var kind=el('p',null,'kind-line');kind.appendChild(el('span',m.point_kind,'kind'+(m.known_answer?' known-answer':'')));
    kind.appendChild(document.createTextNode(' comparison point: '+(m.model_id||'')+', submitted by '+(m.submitted_by||'—')+'. Never on a curve.'));
    body.appendChild(kind);
    if(m.expected){body.appendChild(el('p','Expected, known before any call: '+m.expected,'expected'));}
  }
  body.appendChild(el('p',m.run_date+' · '+(m.series||'comparison point')+' · '+(m.model_family||'')+' · '+(m.returned_model_id||m.subject_model_id||'')));
  body.appendChild(el('p','Reading: '+m.reading,'reading-line'));
  if(m.build_change){body.appendChild(el('p',m.build_change,'build-line'));}
  var bounds=m.bounds||{};
  function bound(k){return bounds[k]?bounds[k]+' (bound '+fmt(m[k])+' points)':fmt(m[k]);}
  var dl=el('dl');
  if(m.unreadable){kv(dl,'stability_pct','not measurable ('+m.unreadable.readable+' of '+m.unreadable.total+' answers of A and B readable): the computed '+fmt(m.stability_pct)+' and its interval are not a result');}
  else{kv(dl,'stability_pct',fmt(m.stability_pct)+'  (95% CI '+fmt(m.ci_low_pct)+'–'+fmt(m.ci_high_pct)+', conditional on this panel)');}
  if(m.replicate_agreement_pct!==null&&m.replicate_agreement_pct!==undefined){
    kv(dl,'replicate_agreement_pct',fmt(m.replicate_agreement_pct)+'  (scenario × version cells whose repeats all came back the same)');
    kv(dl,'ci_stratified_low_pct – high',fmt(m.ci_stratified_low_pct)+'–'+fmt(m.ci_stratified_high_pct)+'  (within-panel: only the repeats of each scenario resampled)');
  }
  if(m.repeats_reading){kv(dl,'reading the interval',m.repeats_reading);}
  kv(dl,'min_detectable_change_pct',m.min_detectable_change_pct===null||m.min_detectable_change_pct===undefined?'— (no interval or drop bound to compare with)':bounds.min_detectable_change_pct?bounds.min_detectable_change_pct+' (computed '+fmt(m.min_detectable_change_pct)+'): no move on the 0–100 scale could be called from here':fmt(m.min_detectable_change_pct)+'  (the smallest move from here the change rule could call, if the next measurement were as precise)');
  kv(dl,'entropy_a / entropy_b',fmt(m.entropy_a,3)+' / '+fmt(m.entropy_b,3));
  kv(dl,'null_floor_pct',fmt(m.null_floor_pct)+(m.at_noise_floor?'  (at the noise floor)':''));
  kv(dl,'gap_pct / gap_null_pct / gap_positive_pct',fmt(m.gap_pct)+' / '+fmt(m.gap_null_pct)+' / '+fmt(m.gap_positive_pct));
  kv(dl,'gap_role_ab_pct',m.gap_role_ab_pct===null||m.gap_role_ab_pct===undefined?'— (this run recorded no option roles)':fmt(m.gap_role_ab_pct)+'  (the A–B distance over what the options are, e.g. sure or gamble, not their letters)');
  kv(dl,'u_a / u_a_prime / u_b / u_c',[m.u_a,m.u_a_prime,m.u_b,m.u_c].map(function(v){return fmt(v,3);}).join(' / '));
  kv(dl,'drop_bound_pct A–B',bound('drop_bound_pct_ab'));
  kv(dl,'drop_bound_pct A–A′',bound('drop_bound_pct_aa'));
  kv(dl,'drop_bound_pct A–C',bound('drop_bound_pct_ac'));
  kv(dl,'scenario_concentration_pct',fmt(m.scenario_concentration_pct));
  kv(dl,'on_curve',m.on_curve?'yes':'no (protocol '+m.protocol_status+')');
  body.appendChild(dl);
  body.appendChild(el('h3','Flags'));
  if(m.flags&&m.flags.length){var ul=el('ul');m.flags.forEach(function(f){var li=el('li');li.appendChild(el('code',f));li.appendChild(document.createTextNode(': '+((m.flag_sentences||{})[f]||rounded((m.flag_reasons||{})[f]||''))));ul.appendChild(li);});body.appendChild(ul);}
  else{body.appendChild(el('p','No flag.'));}
  body.appendChild(el('h3','Checks'));
  var gt=el('table'),gh=el('tr');['check','pair','rule','result'].forEach(function(c){gh.appendChild(el('th',c));});gt.appendChild(gh);
  (m.gates||[]).forEach(function(g){var tr=el('tr');[g.check,g.pair||'',g.rule,g.pass?'pass':'fail → '+g.flag].forEach(function(c){tr.appendChild(el('td',c));});gt.appendChild(tr);});
  var gw=el('div',null,'scroll');gw.appendChild(gt);body.appendChild(gw);
  var options=Object.keys((m.decisions||{}).A||{});
  grid('Decisions per version',m.decisions,options);
  grid('Outcomes per version',m.outcomes,['valid','unparseable','refused','blocked_upstream','truncated','empty','off_format']);
  body.appendChild(el('h3','Per-scenario gap (points)'));
  var sg=el('p');sg.textContent=Object.keys(m.scenario_gaps_pct||{}).map(function(k){return k+' '+fmt(m.scenario_gaps_pct[k]);}).join(' · ');body.appendChild(sg);
  if(m.responses&&m.responses.length){
    body.appendChild(el('h3','What the model wrote (from the open-lane file)'));
    m.responses.forEach(function(r){
      var fig=el('figure',null,'response');
      fig.appendChild(el('figcaption','Version '+r.version+', scenario '+r.item_id+', trial '+r.trial_index+' — decision read by the grammar: '+(r.decision!==null&&r.decision!==undefined?r.decision:'none ('+r.outcome+')')));
      fig.appendChild(el('pre',r.text+(r.cut?' …':''),'response-text'));
      body.appendChild(fig);
    });
  }
  var hs=human[m.protocol_id];
  if(hs&&hs.length){body.appendChild(el('h3','Human result beside this protocol (secondary, never aggregated)'));
    hs.forEach(function(h){body.appendChild(el('p',h.study+' — collected '+h.year+', '+h.design+': '+fmt(h.effect_pct)+' points. '+h.effect_definition+' Read it against this run\'s gap_role_ab_pct: '+fmt(m.gap_role_ab_pct)+' (gap_pct, by letter: '+fmt(m.gap_pct)+').'));});}
  body.appendChild(el('h3','Identity'));
  var id=el('dl');['run_id','panel_sha256','protocol_sha256','extractor_sha','analysis_code_sha','schema_sha256','grammar_version','condition_profile','bootstrap_seed','lane','twin_id'].forEach(function(k){kv(id,k,fmt(m[k]));});
  var fps=m.system_fingerprints;
  if(!(m.point_kind&&fps===undefined)){kv(id,'system_fingerprints',fps===null||fps===undefined?'— (recorded before trials carried the server build)':fps.length?fps.join(', ')+(fps.length>1?'  (the server changed build during the run)':''):'none (the API reports no build)');}
  body.appendChild(id);
  drawer.hidden=false;drawer.focus();
}
function close(){drawer.hidden=true;if(opener){opener.focus();opener=null;}}
document.getElementById('drawer-close').addEventListener('click',close);
document.addEventListener('keydown',function(ev){if(ev.key==='Escape'&&!drawer.hidden){close();}});
[].forEach.call(document.querySelectorAll('tr[data-run]'),function(tr){
  if(!data[tr.getAttribute('data-run')]){return;}
  tr.classList.add('row');tr.tabIndex=0;
  tr.addEventListener('click',function(){open(tr.getAttribute('data-run'),tr);});
  tr.addEventListener('keydown',function(ev){if(ev.key==='Enter'||ev.key===' '){ev.preventDefault();open(tr.getAttribute('data-run'),tr);}});
});
})();
