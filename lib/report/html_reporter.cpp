// A self-contained HTML explorer: the run record embedded as JSON (summaries only, no raw samples), rendered by
// inline JS (no network, no external files). A headline and a speedup chart (inline SVG, speedup_chart.h) at the
// top; a results table with a filter box and per-case details (checks, statistics with a box per series);
// search trees with each node's source, its diff to the parent and its timing. Stays small (#19: 2 MB for the
// seed suite; tests/report/check_html.py times it in headless Chromium).
#include <fmt/format.h>

#include "report/reporter.h"
#include "report/run_summary.h"
#include "report/speedup_chart.h"
#include "report/text_escape.h"
#include "spec/baseline_registry.h"

namespace kf {
namespace {

constexpr std::string_view k_style = R"KF(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.5em 0 .5em}
.env{color:#666;font-size:.9em;margin-bottom:1em}
input#q{width:24em;padding:.3em;margin:.5em 0}
table{border-collapse:collapse;width:100%}th,td{padding:.25em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.row{cursor:pointer}tr.row:hover{background:#f5f8ff}
.passed{color:#1a7f37}.failed{color:#cf222e;font-weight:600}.skipped{color:#9a6700}.error{color:#8250df;font-weight:600}
.inconclusive{color:#0969da;font-weight:600}.headline{font-size:1.1em;margin:.4em 0}.note{color:#555;margin:.2em 0}
.detail{background:#fafafa;padding:.6em 1em}.detail pre,.src pre{white-space:pre-wrap;font-size:12px;margin:.3em 0}
.tree ul{list-style:none;padding-left:1.2em;margin:0}.tree li span{cursor:pointer}.tree li span:hover{text-decoration:underline}
.sel{background:#fff3bf}.cols{display:flex;gap:1em}.cols>div{flex:1;min-width:0}
.add{background:#e6ffec}.del{background:#ffebe9}.banner{background:#fff8c5;padding:.5em;border:1px solid #d4a72c}
svg{background:#fff;border:1px solid #ddd}
)KF";

constexpr std::string_view k_script = R"KF(
const R=JSON.parse(document.getElementById('kf-data').textContent);
const $=(t,a={},...k)=>{const e=document.createElement(t);for(const[x,v]of Object.entries(a)){if(x=='class')e.className=v;else if(x.startsWith('on'))e[x]=v;else e.setAttribute(x,v)}for(const c of k)e.append(c);return e};
const us=v=>v<10?v.toFixed(2):v<1000?v.toFixed(1):v.toFixed(0);
const rank={failed:0,error:1,inconclusive:2,skipped:3,passed:4};
const nohist=k=>k.kind=='regression'&&k.against=='history'&&k.outcome=='skipped';
const counted=cs=>cs.filter(k=>!k.advisory&&!nohist(k));
function worst(cs){let o='passed';for(const c of counted(cs))if(rank[c.outcome]<rank[o])o=c.outcome;return o}
function verdict(cs,o){if(o=='passed')return o;const n=counted(cs).filter(k=>k.outcome==o).map(k=>k.name);return n.length?o+': '+n.join(', '):o}
function cell(c,i){if(!i)return'—';if(i.status!='ok')return i.status;const s=(c.metric=='hot'&&i.hot)?i.hot:i.cold;return s&&s.count?us(s.median_us)+' µs':'—'}
function boxes(c){const W=420,H=16;const all=[];for(const i of c.impls){const s=(c.metric=='hot'&&i.hot)?i.hot:i.cold;if(i.status=='ok'&&s&&s.count)all.push([i.impl,s])}
 if(!all.length)return'';let lo=Infinity,hi=0;for(const[,s]of all){lo=Math.min(lo,s.min_us);hi=Math.max(hi,s.q3_us,s.ci_hi_us)}const sc=x=>10+(W-20)*(hi>lo?(x-lo)/(hi-lo):.5);
 let g=`<svg width="${W+90}" height="${all.length*H+20}">`;all.forEach(([n,s],k)=>{const y=k*H+4;g+=`<text x="${W+5}" y="${y+10}" font-size="11">${n}</text>`+
  `<line x1="${sc(s.min_us).toFixed(1)}" x2="${sc(s.q3_us).toFixed(1)}" y1="${y+6}" y2="${y+6}" stroke="#999"/>`+
  `<rect x="${sc(s.q1_us).toFixed(1)}" y="${y}" width="${Math.max(1,sc(s.q3_us)-sc(s.q1_us)).toFixed(1)}" height="12" fill="#dde6f5" stroke="#4c78a8"/>`+
  `<rect x="${sc(s.ci_lo_us).toFixed(1)}" y="${y+3}" width="${Math.max(1,sc(s.ci_hi_us)-sc(s.ci_lo_us)).toFixed(1)}" height="6" fill="#4c78a8"/>`+
  `<line x1="${sc(s.median_us).toFixed(1)}" x2="${sc(s.median_us).toFixed(1)}" y1="${y-1}" y2="${y+13}" stroke="#000" stroke-width="2"/>`});
 g+=`<text x="10" y="${all.length*H+15}" font-size="10">${us(lo)} µs</text><text x="${W-60}" y="${all.length*H+15}" font-size="10">${us(hi)} µs</text></svg>`;return g}
function details(w,c){const d=$('div',{class:'detail'});const cs=w.checks.filter(k=>!k.case||!c||k.case==c.name);
 for(const k of cs)if(!nohist(k))d.append($('div',{},$('span',{class:k.outcome},k.outcome),' ',$('code',{},k.name),' — ',k.sentence||''));
 const bad=w.verify.checks.filter(v=>!v.passed&&(!c||!v.case||v.case==c.name));for(const v of bad)d.append($('div',{class:'failed'},`verify ${v.rule} (case ${v.case||'-'}, seed ${v.seed}): ${v.detail}`));
 if(w.error)d.append($('div',{class:'error'},w.error));if(w.compile_log)d.append($('pre',{},w.compile_log));
 if(c){const t=$('table');t.append($('tr',{},...['impl','status','median','q1–q3','99% CI of median','min','noise','n','discarded'].map(h=>$('th',{},h))));
  for(const i of c.impls){const s=(c.metric=='hot'&&i.hot)?i.hot:i.cold;t.append($('tr',{},$('td',{},i.impl),$('td',{class:i.status=='ok'?'passed':'skipped'},i.status+(i.why?': '+i.why:'')),
   $('td',{class:'n'},us(s.median_us)),$('td',{class:'n'},us(s.q1_us)+'–'+us(s.q3_us)),$('td',{class:'n'},us(s.ci_lo_us)+'–'+us(s.ci_hi_us)),$('td',{class:'n'},us(s.min_us)),$('td',{class:'n'},(s.noise*100).toFixed(2)+'%'),$('td',{class:'n'},''+s.count),$('td',{class:'n'},''+s.discarded)))}
  d.append(t);const f=c.floor;d.append($('div',{},`floor ${us(f.floor_us)} µs (bandwidth ${us(f.bandwidth_floor_us)} µs for ${f.bytes} bytes, launch ${us(f.launch_floor_us)} µs); kernel reaches ${(f.fraction*100).toFixed(0)}%; metric: ${c.metric}`));
  const sv=document.createElement('div');sv.innerHTML=boxes(c);d.append(sv,$('div',{class:'note'},'box: q1–q3 · dark bar: 99% interval of the median · line: median · whisker from min'))}
 return d}
function results(){const tb=document.getElementById('rows');tb.innerHTML='';const q=document.getElementById('q').value.toLowerCase();
 for(const w of R.workloads){const cases=w.cases.length?w.cases:[null];for(const c of cases){const name=w.name+' '+(c?c.name:'');if(q&&!name.toLowerCase().includes(q))continue;
  const cs=w.checks.filter(k=>!k.case||!c||k.case==c.name);const o=w.error?'error':worst(cs);
  const sp=c?Object.entries(c.speedups).map(([b,s])=>`×${s.toFixed(2)} ${b}`).join(', '):'';
  const tr=$('tr',{class:'row'},$('td',{},w.name),$('td',{},c?c.name:'—'),...IM.map(i=>$('td',{class:'n'},c?cell(c,c.impls.find(x=>x.impl==i)):(i=='kernel'?(w.kernel_note||'—'):'—'))),
   $('td',{},sp),$('td',{class:'n'},c&&c.floor.fraction?(c.floor.fraction*100).toFixed(0)+'%':'—'),$('td',{class:o},w.error?'error':verdict(cs,o)));
  let open=null;tr.onclick=()=>{if(open){open.remove();open=null;return}const x=$('tr',{},$('td',{colspan:9},details(w,c)));tr.after(x);open=x};tb.append(tr)}}}
function diff(a,b){a=a.split('\n');b=b.split('\n');if(a.length*b.length>4e6)return[['','(too large to diff)']];const n=a.length,m=b.length;const L=Array.from({length:n+1},()=>new Int32Array(m+1));
 for(let i=n-1;i>=0;i--)for(let j=m-1;j>=0;j--)L[i][j]=a[i]==b[j]?L[i+1][j+1]+1:Math.max(L[i+1][j],L[i][j+1]);const out=[];let i=0,j=0;
 while(i<n&&j<m){if(a[i]==b[j]){out.push([' ',a[i]]);i++;j++}else if(L[i+1][j]>=L[i][j+1])out.push(['-',a[i++]]);else out.push(['+',b[j++]])}
 while(i<n)out.push(['-',a[i++]]);while(j<m)out.push(['+',b[j++]]);return out}
function trees(){const box=document.getElementById('trees');if(!R.searches||!R.searches.length){box.remove();return}
 for(const t of R.searches){const byId=new Map(t.nodes.map(n=>[n.id,n]));const kids=new Map();for(const n of t.nodes){if(!kids.has(n.parent))kids.set(n.parent,[]);kids.get(n.parent).push(n)}
  const ok=t.nodes.filter(n=>n.time_us>0);const best=ok.length?ok.reduce((a,b)=>a.time_us<b.time_us?a:b):null;
  const view=$('div',{class:'src'});let selEl=null;
  const show=(n,el)=>{if(selEl)selEl.classList.remove('sel');selEl=el;el.classList.add('sel');view.innerHTML='';const p=byId.get(n.parent);
   view.append($('div',{},$('b',{},`#${n.id} ${n.label}`),` — ${n.status}`+(n.time_us?`, ${us(n.time_us)} µs`:'')+`, reward ${n.reward.toFixed(3)}`+(p?` (parent #${p.id}`+(p.time_us&&n.time_us?`: ${us(p.time_us)} → ${us(n.time_us)} µs`:'')+')':'')));
   const cols=$('div',{class:'cols'});const s=$('pre',{});s.textContent=n.source;cols.append($('div',{},$('h3',{},'source'),s));
   if(p){const d=$('pre',{});for(const[k,l]of diff(p.source,n.source)){const e=$('div',{class:k=='+'?'add':k=='-'?'del':''});e.textContent=k+' '+l;d.append(e)}cols.append($('div',{},$('h3',{},`diff to #${p.id}`),d))}
   view.append(cols)};
  const build=pid=>{const ul=$('ul');for(const n of(kids.get(pid)||[]).sort((a,b)=>(a.time_us||1e18)-(b.time_us||1e18))){const sp=$('span',{class:n.status=='ok'?'':'failed'},`#${n.id} ${n.label} `+(n.time_us?us(n.time_us)+' µs':n.status)+(n===best?' ★':''));
   const li=$('li',{},sp);sp.onclick=()=>show(n,sp);if(kids.has(n.id))li.append(build(n.id));ul.append(li)}return ul};
  box.append($('h2',{},`search: ${t.workload} on ${t.gpu_key} (${t.nodes.length} nodes)`),$('div',{class:'cols'},$('div',{class:'tree'},build(-1)),view))}}
document.getElementById('q').oninput=results;results();trees();
)KF";

// The embedded record: what the explorer shows. Passed verification checks are counted, not listed (the
// explorer shows the failed ones; the run JSON has them all).
std::string embedded_json(const run_result& r) {
  nlohmann::json j = to_json(r);
  for (auto& w : j["workloads"]) {
    auto& checks = w["verify"]["checks"];
    nlohmann::json failed = nlohmann::json::array();
    for (auto& c : checks)
      if (!c.value("passed", false)) failed.push_back(c);
    w["verify"]["passed_checks"] = checks.size() - failed.size();
    checks = failed;
  }
  return script_safe_json(safe_dump(j));
}

std::string summary_html(const run_result& r) {
  run_summary s = summarize_run(r);
  std::string status_class = s.status == "passed" ? "passed" : s.status == "failed" ? "failed" : s.status == "error" ? "error"
                             : s.status == "inconclusive" ? "inconclusive" : "skipped";
  std::string out = fmt::format("<div class=\"headline\"><b class=\"{}\">{}</b> · <span class=\"passed\">{} passed</span> · "
                                "<span class=\"failed\">{} failed</span>",
                                status_class, html_escape(s.status), s.passed, s.failed);
  if (s.errors) out += fmt::format(" · <span class=\"error\">{} error{}</span>", s.errors, s.errors == 1 ? "" : "s");
  if (s.inconclusive) out += fmt::format(" · <span class=\"inconclusive\">{} inconclusive</span>", s.inconclusive);
  if (s.skipped) out += fmt::format(" · <span class=\"skipped\">{} with skipped checks</span>", s.skipped);
  if (s.no_kernel)
    out += fmt::format(" · <span class=\"skipped\">{} not verified (no kernel for {})</span>", s.no_kernel, html_escape(r.env.gpu_key));
  out += "</div>\n";
  if (s.verified == 0 && !r.workloads.empty())
    out += fmt::format("<p class=\"banner\">Nothing was verified: no workload has a kernel for {} (<code>kforge retune</code> "
                       "searches for one; <code>gate.require_kernel: true</code> makes this a failure).</p>\n",
                       html_escape(r.env.gpu_key));
  if (s.history_missing > 0)
    out += fmt::format("<p class=\"note\">No history to compare with: {} ({} regression check{} skipped).</p>\n",
                       html_escape(s.history_why), s.history_missing, s.history_missing == 1 ? "" : "s");
  return out;
}

}  // namespace

std::string render_html(const run_result& r) {
  std::string title = fmt::format("kforge run — {} workloads on {}", r.workloads.size(),
                                  r.env.gpu_name.empty() ? r.env.gpu_key : r.env.gpu_name);
  std::string env = fmt::format("GPU key {} · driver {} · CUDA {} · cuDNN {} · torch {} · commit {} · {}", r.env.gpu_key,
                                r.env.driver, r.env.cuda_runtime, r.env.cudnn, r.env.torch, r.env.git_commit.substr(0, 12),
                                r.env.started_at);
  std::string out = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style></head><body>\n", html_escape(title), k_style);
  out += fmt::format("<h1>{}</h1>\n<div class=\"env\">{}</div>\n", html_escape(title), html_escape(env));
  out += summary_html(r);
  if (!r.complete) out += fmt::format("<p class=\"banner\">Incomplete run: {}</p>\n", html_escape(r.incomplete_reason));
  if (std::string chart = speedup_chart_svg(r); !chart.empty()) out += "<h2>Speedups</h2>\n" + chart;
  out += "<noscript><p>The results table needs JavaScript; the data is in the kf-data element.</p></noscript>\n";
  out += "<h2>Results</h2>\n<input id=\"q\" placeholder=\"filter by workload or case\" aria-label=\"filter\">\n";
  // The time columns: the kernel, then each registered baseline (IM in the script).
  nlohmann::json columns = nlohmann::json::array({"kernel"});
  std::string headers = "<th>kernel</th>";
  for (const auto& b : registered_baselines()) {
    columns.push_back(b.name);
    headers += "<th>" + html_escape(b.column_or_name()) + "</th>";
  }
  out += "<table><thead><tr><th>workload</th><th>case</th>" + headers +
         "<th>speedup</th><th>of floor</th><th>verdict</th></tr></thead><tbody id=\"rows\"></tbody></table>\n";
  out += "<div id=\"trees\"></div>\n";
  out += "<script type=\"application/json\" id=\"kf-data\">" + embedded_json(r) + "</script>\n";
  out += fmt::format("<script>const IM={};{}</script>\n</body></html>\n", script_safe_json(safe_dump(columns)), k_script);
  return out;
}

}  // namespace kf
