# ruff: noqa: E501  (the embedded JavaScript is kept compact: it ships in every report)
"""The explorer's stylesheet and script, inlined into the page (no file is fetched).

The script reads the columnar data once, keeps filtering and sorting as typed-array index
permutations, and renders only the rows in view (a fixed row height over a tall spacer).
The word diff of the shown row runs in the page: one pair at a time, when a row is opened,
so the file carries no precomputed diff for executions nobody looks at.
"""

from __future__ import annotations

__all__ = ["EXPLORER_CSS", "EXPLORER_JS", "WORD_DIFF_JS"]

EXPLORER_CSS = """
.ef-x .ef-x-controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:6px 0}
.ef-x input,.ef-x select{font:inherit;padding:2px 6px;border:1px solid #d0d7de;border-radius:4px}
.ef-x #ef-x-search{min-width:240px}
.ef-x .ef-x-table{border:1px solid #d8dee4;border-radius:4px;overflow-x:auto}
.ef-x .ef-x-head,.ef-x .ef-x-row{display:grid;align-items:center;column-gap:8px;padding:0 8px}
.ef-x .ef-x-head{background:#f6f8fa;font-weight:600;height:26px;border-bottom:1px solid #d8dee4}
.ef-x .ef-x-head span{cursor:pointer;user-select:none;white-space:nowrap}
.ef-x .ef-x-head span[data-dir="asc"]::after{content:" \\25B2"}
.ef-x .ef-x-head span[data-dir="desc"]::after{content:" \\25BC"}
.ef-x .ef-x-scroll{height:420px;overflow-y:auto;position:relative}
.ef-x .ef-x-spacer{position:relative}
.ef-x .ef-x-row{position:absolute;left:0;right:0;height:24px;border-bottom:1px solid #eaeef2;
  cursor:pointer}
.ef-x .ef-x-row:hover{background:#f6f8fa}
.ef-x .ef-x-row.ef-x-sel{background:#ddf4ff}
.ef-x .ef-x-row span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.ef-x .ef-x-num{text-align:right;font-variant-numeric:tabular-nums}
.ef-x .ef-x-fail{color:#cf222e}
.ef-x .ef-x-err{color:#9a6700;font-weight:600}
.ef-x .ef-x-detail{border:1px solid #d8dee4;border-radius:4px;padding:8px 12px;margin:8px 0}
.ef-x .ef-x-pair{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.ef-x pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px 8px;
  border-radius:4px;margin:2px 0 8px;font-size:12px;max-height:320px;overflow:auto}
.ef-x ins,.ef-cmp ins{background:#ccffd8;text-decoration:none}
.ef-x del,.ef-cmp del{background:#ffd7d5;text-decoration:none}
.ef-x .ef-x-json details{margin-left:12px}
.ef-x .ef-x-json summary{cursor:pointer}
""".strip()

WORD_DIFF_JS = r"""
function efTokens(s){return (s==null?"":String(s)).match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu)||[];}
function efEsc(s){return String(s).replace(/[&<>"']/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));}
// Word diff of two texts: [[op, token], ...] with op "=", "-" (only in a) or "+" (only in b).
// A longest common subsequence of tokens; past 4 million cells only the common prefix and
// suffix are kept and the middle is marked changed.
function efDiff(a,b){
  const x=efTokens(a),y=efTokens(b);let p=0;
  while(p<x.length&&p<y.length&&x[p]===y[p])p++;
  let s=0;while(s<x.length-p&&s<y.length-p&&x[x.length-1-s]===y[y.length-1-s])s++;
  const xa=x.slice(p,x.length-s),ya=y.slice(p,y.length-s),out=[];
  for(let i=0;i<p;i++)out.push(["=",x[i]]);
  const n=xa.length,m=ya.length;
  if(n*m>4e6){for(const t of xa)out.push(["-",t]);for(const t of ya)out.push(["+",t]);}
  else{
    const w=m+1,L=new Int32Array((n+1)*w);
    for(let i=n-1;i>=0;i--)for(let j=m-1;j>=0;j--)
      L[i*w+j]=xa[i]===ya[j]?L[(i+1)*w+j+1]+1:Math.max(L[(i+1)*w+j],L[i*w+j+1]);
    let i=0,j=0;
    while(i<n&&j<m){
      if(xa[i]===ya[j]){out.push(["=",xa[i]]);i++;j++;}
      else if(L[(i+1)*w+j]>=L[i*w+j+1]){out.push(["-",xa[i]]);i++;}
      else{out.push(["+",ya[j]]);j++;}
    }
    for(;i<n;i++)out.push(["-",xa[i]]);for(;j<m;j++)out.push(["+",ya[j]]);
  }
  for(let i=x.length-s;i<x.length;i++)out.push(["=",x[i]]);
  return out;
}
// The two sides of a diff as HTML: a with its removed words in <del>, b with added in <ins>.
function efDiffHtml(a,b){
  let l="",r="";
  for(const [op,t] of efDiff(a,b)){
    const e=efEsc(t);
    if(op==="=" ){l+=e;r+=e;}
    else if(op==="-"){l+=/^\s+$/.test(t)?e:"<del>"+e+"</del>";}
    else{r+=/^\s+$/.test(t)?e:"<ins>"+e+"</ins>";}
  }
  return [l,r];
}
"""

EXPLORER_JS = (
    WORD_DIFF_JS
    + r"""
(function(){
"use strict";
const D=JSON.parse(document.getElementById("ef-x-data").textContent);
const N=D.id.length,M=D.metrics.length,ROW=24,$=id=>document.getElementById(id);
const S=D.metrics.map(m=>Float64Array.from(D.score[m],v=>v==null?NaN:v));
const E=D.metrics.map(m=>Int32Array.from(D.error[m],v=>v==null?-1:v));
const T=D.thresholds;
// Per execution: 0 pass, 1 below a threshold, 2 errored (on any metric), 3 not scored.
const status=new Uint8Array(N);
for(let i=0;i<N;i++){
  let err=false,fail=false,seen=false;
  for(let k=0;k<M;k++){if(E[k][i]>=0)err=true;else if(!isNaN(S[k][i])){seen=true;if(S[k][i]<T[k])fail=true;}}
  status[i]=err?2:fail?1:seen?0:3;
}
const STATUS=["pass","fail","error","—"];
let hay=null,order=Int32Array.from({length:N},(_,i)=>i),view=order,sortKey=null,sortDir=1,sel=-1;
function haystack(){
  if(!hay){hay=new Array(N);for(let i=0;i<N;i++)
    hay[i]=(D.id[i]+"\u0001"+(D.actual[i]||"")+"\u0001"+(D.input[i]||"")+"\u0001"+(D.expected[i]||"")).toLowerCase();}
  return hay;
}
const cols=[["id","sample","minmax(120px,1.3fr)"],["rep","rep","44px"],["status","status","58px"]]
  .concat(D.metrics.map((m,k)=>["m"+k,m,"minmax(70px,110px)"]))
  .concat([["tags","tags","minmax(80px,.8fr)"],["actual","actual output","minmax(160px,2.5fr)"]]);
const grid=cols.map(c=>c[2]).join(" ");
const head=$("ef-x-head");head.style.gridTemplateColumns=grid;
head.innerHTML=cols.map(c=>'<span data-sort="'+c[0]+'" title="sort by '+efEsc(c[1])+'">'+efEsc(c[1])+"</span>").join("");
const msel=$("ef-x-metric"),csel=$("ef-x-cohort");
D.metrics.forEach((m,k)=>msel.add(new Option(m,String(k))));
D.tag_names.forEach((t,k)=>csel.add(new Option(t,String(k))));
if(D.tags.some(t=>!t.length))csel.add(new Option("(untagged)","untagged"));
function cmpNum(a,b){const an=isNaN(a),bn=isNaN(b);if(an||bn)return an&&bn?0:an?1:-1;return (a-b)*sortDir;}
function keyOf(key){
  if(key==="id")return (a,b)=>(D.id[a]<D.id[b]?-1:D.id[a]>D.id[b]?1:D.rep[a]-D.rep[b])*sortDir;
  if(key==="rep")return (a,b)=>(D.rep[a]-D.rep[b])*sortDir;
  if(key==="status")return (a,b)=>(status[a]-status[b])*sortDir;
  if(key==="actual")return (a,b)=>{const x=D.actual[a]||"",y=D.actual[b]||"";return (x<y?-1:x>y?1:0)*sortDir;};
  if(key==="tags")return (a,b)=>{const x=D.tags[a].length?D.tag_names[D.tags[a][0]]:"",y=D.tags[b].length?D.tag_names[D.tags[b][0]]:"";return (x<y?-1:x>y?1:0)*sortDir;};
  const s=S[+key.slice(1)];return (a,b)=>cmpNum(s[a],s[b])||a-b;
}
function apply(){
  const q=$("ef-x-search").value.trim().toLowerCase(),mk=msel.value===""?-1:+msel.value;
  const cv=csel.value,st=$("ef-x-status").value,out=[];
  const h=q?haystack():null,ct=cv===""?-1:cv==="untagged"?-2:+cv;
  for(let n=0;n<order.length;n++){
    const i=order[n];
    if(h&&h[i].indexOf(q)<0)continue;
    if(ct===-2?D.tags[i].length:ct>=0&&D.tags[i].indexOf(ct)<0)continue;
    if(mk>=0){
      const e=E[mk][i]>=0,s=S[mk][i];
      if(!e&&isNaN(s))continue;
      if(st==="pass"&&(e||s<T[mk]))continue;
      if(st==="fail"&&(e||!(s<T[mk])))continue;
      if(st==="error"&&!e)continue;
    }else if(st){
      if(st==="pass"&&status[i]!==0)continue;
      if(st==="fail"&&!failsAny(i))continue;
      if(st==="error"&&status[i]!==2)continue;
    }
    out.push(i);
  }
  view=Int32Array.from(out);
  $("ef-x-count").textContent=view.length+" of "+N+" shown";
  $("ef-x-spacer").style.height=(view.length*ROW)+"px";
  $("ef-x-scroll").scrollTop=0;paint(true);
}
function failsAny(i){for(let k=0;k<M;k++)if(E[k][i]<0&&S[k][i]<T[k])return true;return false;}
function sortBy(key){
  if(sortKey===key)sortDir=-sortDir;else{sortKey=key;sortDir=1;}
  const idx=Array.from({length:N},(_,i)=>i);idx.sort(keyOf(key));order=Int32Array.from(idx);
  for(const s of head.children)s.dataset.dir=s.dataset.sort===key?(sortDir>0?"asc":"desc"):"";
  apply();
}
function cell(i,c){
  const k=c[0];
  if(k==="id")return '<span title="'+efEsc(D.id[i])+'">'+efEsc(D.id[i])+"</span>";
  if(k==="rep")return '<span class="ef-x-num">'+D.rep[i]+"</span>";
  if(k==="status")return '<span class="'+(status[i]===1?"ef-x-fail":status[i]===2?"ef-x-err":"")+'">'+STATUS[status[i]]+"</span>";
  if(k==="tags")return "<span>"+efEsc(D.tags[i].map(t=>D.tag_names[t]).join(", "))+"</span>";
  if(k==="actual")return "<span>"+efEsc(String(D.actual[i]==null?"":D.actual[i]).slice(0,300))+"</span>";
  const m=+k.slice(1);
  if(E[m][i]>=0)return '<span class="ef-x-num ef-x-err" title="'+efEsc(D.errors[E[m][i]])+'">error</span>';
  const s=S[m][i];
  return '<span class="ef-x-num'+(s<T[m]?" ef-x-fail":"")+'">'+(isNaN(s)?"":s.toFixed(4))+"</span>";
}
let painted=[-1,-1];
function paint(force){
  const sc=$("ef-x-scroll"),first=Math.max(0,Math.floor(sc.scrollTop/ROW)-10);
  const last=Math.min(view.length,first+Math.ceil(sc.clientHeight/ROW)+20);
  if(!force&&first===painted[0]&&last===painted[1])return;
  painted=[first,last];let html="";
  for(let n=first;n<last;n++){const i=view[n];
    html+='<div class="ef-x-row'+(i===sel?" ef-x-sel":"")+'" data-i="'+i+'" style="top:'+(n*ROW)+'px;grid-template-columns:'+grid+'">'+cols.map(c=>cell(i,c)).join("")+"</div>";}
  $("ef-x-spacer").innerHTML=html;
}
function pretty(text){
  if(text==null)return null;
  try{const v=JSON.parse(text);return typeof v==="string"?v:JSON.stringify(v,null,2);}catch(e){return String(text);}
}
function jsonTree(v){
  if(v===null||typeof v!=="object")return "<code>"+efEsc(JSON.stringify(v))+"</code>";
  const entries=Array.isArray(v)?v.map((x,i)=>[String(i),x]):Object.entries(v);
  if(!entries.length)return "<code>"+(Array.isArray(v)?"[]":"{}")+"</code>";
  return entries.map(([k,x])=>x!==null&&typeof x==="object"
    ?"<details open><summary>"+efEsc(k)+"</summary>"+jsonTree(x)+"</details>"
    :"<div>"+efEsc(k)+": "+(typeof x==="string"?"<pre>"+efEsc(x)+"</pre>":jsonTree(x))+"</div>").join("");
}
// Details name the row's expected or actual output instead of repeating it (see _explorer.py).
function unref(v,i){
  if(v==="\u0001expected")return D.expected[i];
  if(v==="\u0001actual")return D.actual[i];
  if(v===null||typeof v!=="object")return v;
  if(Array.isArray(v))return v.map(x=>unref(x,i));
  const o={};for(const k in v)o[k]=unref(v[k],i);return o;
}
function section(title,body){return "<h4>"+efEsc(title)+"</h4>"+body;}
function show(i){
  sel=i;paint(true);
  const d=$("ef-x-detail");d.hidden=false;
  const input=pretty(D.input[i]),exp=D.expected[i],act=D.actual[i];
  let h="<h3>"+efEsc(D.id[i])+' <span class="ef-muted">repetition '+D.rep[i]+" · "+STATUS[status[i]]+"</span></h3>";
  if(D.tags[i].length)h+='<p class="ef-muted">tags: '+efEsc(D.tags[i].map(t=>D.tag_names[t]).join(", "))+"</p>";
  h+=section("input",input==null?'<p class="ef-muted">Not in a report JSON file: render from the run store to see inputs.</p>':"<pre>"+efEsc(input)+"</pre>");
  if(exp==null){h+='<div class="ef-x-pair"><div>'+section("expected output",'<p class="ef-muted">none</p>')+"</div><div>"+section("actual output","<pre>"+efEsc(act==null?"":act)+"</pre>")+"</div></div>";}
  else{const [l,r]=efDiffHtml(pretty(exp),act==null?"":String(act));
    h+='<div class="ef-x-pair"><div>'+section("expected output",'<pre class="ef-x-diff-a">'+l+"</pre>")+"</div><div>"+section("actual output",'<pre class="ef-x-diff-b">'+r+"</pre>")+"</div></div>";}
  let rows="";
  for(let k=0;k<M;k++){
    const e=E[k][i],s=S[k][i],dt=D.details[D.metrics[k]][i];
    const verdict=e>=0?'<span class="ef-x-err">error</span>':isNaN(s)?"not scored":s<T[k]?'<span class="ef-x-fail">fail</span>':"pass";
    const det=e>=0?efEsc(D.errors[e]):dt==null?"":'<div class="ef-x-json">'+jsonTree(unref(JSON.parse(D.detail_texts[dt]),i))+"</div>";
    rows+="<tr><td><code>"+efEsc(D.metrics[k])+"</code></td><td>"+(isNaN(s)?"":s.toFixed(4))+"</td><td>"+T[k]+"</td><td>"+verdict+'</td><td class="ef-wrap">'+det+"</td></tr>";
  }
  h+=section("scores","<table><thead><tr><th>metric</th><th>score</th><th>threshold</th><th>verdict</th><th>details</th></tr></thead><tbody>"+rows+"</tbody></table>");
  if(D.trajectory&&D.trajectory[i]!=null)h+=section("trajectory",'<div class="ef-x-json ef-x-trajectory">'+jsonTree(JSON.parse(D.trajectory[i]))+"</div>");
  if(D.contexts&&D.contexts[i]!=null){const cx=JSON.parse(D.contexts[i]);
    h+=section("retrieved contexts","<ol>"+(Array.isArray(cx)?cx:[cx]).map(c=>"<li><pre>"+efEsc(typeof c==="string"?c:JSON.stringify(c,null,2))+"</pre></li>").join("")+"</ol>");}
  else if(D.context_counts&&D.context_counts[i]!=null)h+=section("retrieved contexts",'<p class="ef-muted">'+D.context_counts[i]+(D.context_counts[i]===1?" context":" contexts")+"; their text is left out (render with --include-evidence to see it).</p>");
  if(D.metadata&&D.metadata[i]!=null)h+=section("metadata",'<div class="ef-x-json">'+jsonTree(JSON.parse(D.metadata[i]))+"</div>");
  d.innerHTML=h;
}
head.addEventListener("click",ev=>{const s=ev.target.closest("[data-sort]");if(s)sortBy(s.dataset.sort);});
$("ef-x-spacer").addEventListener("click",ev=>{const r=ev.target.closest(".ef-x-row");if(r)show(+r.dataset.i);});
$("ef-x-scroll").addEventListener("scroll",()=>paint(false),{passive:true});
let timer=0;$("ef-x-search").addEventListener("input",()=>{clearTimeout(timer);timer=setTimeout(apply,120);});
for(const id of ["ef-x-metric","ef-x-cohort","ef-x-status"])$(id).addEventListener("change",apply);
apply();
document.body.dataset.efExplorer="ready";
window.efExplorerReady=performance.now();
})();
"""
)
