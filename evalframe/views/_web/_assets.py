# ruff: noqa: E501  (the script is kept compact, as the report's is)
"""The viewer's static assets, served from memory at ``/assets/NAME`` (no file is read).

``app.js`` is the little the pages need beyond HTML: filters that apply on change, rows that
open on click, the Label page's keyboard, the charts drawn by Vega-Lite (whose bundle,
``vega.js``, comes from ``vl-convert-python`` when the ``viz`` extra is installed). Every
page works without it, but for labelling and the charts.
"""

from __future__ import annotations

import functools
from typing import Final

__all__ = ["APP_JS", "asset", "has_vega", "warm"]

APP_JS: Final = r"""
(function(){
"use strict";
const $=s=>document.querySelector(s),$$=s=>Array.from(document.querySelectorAll(s));
// Filters apply as soon as a choice changes.
for(const f of $$("form[data-autosubmit]"))for(const s of f.querySelectorAll("select"))
  s.addEventListener("change",()=>f.requestSubmit());
// A row with data-href opens on click (its own links and inputs keep their behaviour).
for(const tr of $$("tr[data-href]"))tr.addEventListener("click",ev=>{
  if(ev.target.closest("a,input,button,label"))return;location.href=tr.dataset.href;});
// Comparing: between 2 and 10 runs selected.
const cmp=$("#ef-compare-go");
if(cmp){const boxes=$$("input[name=pick]");const upd=()=>{const n=boxes.filter(b=>b.checked).length;
  cmp.disabled=n<2||n>10;$("#ef-compare-n").textContent=n+" selected";};
  boxes.forEach(b=>b.addEventListener("change",upd));upd();}
// SQL: Ctrl+Enter runs the query.
const sql=$("#ef-sql-text");
if(sql)sql.addEventListener("keydown",ev=>{if(ev.key==="Enter"&&(ev.ctrlKey||ev.metaKey)){ev.preventDefault();sql.form.requestSubmit();}});
// Charts: each spec beside its container, drawn by vega-embed when the bundle is loaded.
function draw(root){
  const specs=Array.from(root.querySelectorAll("script.ef-vega"));
  if(!window.vegaEmbed)return Promise.resolve();
  return Promise.all(specs.map(s=>vegaEmbed("#"+s.dataset.target,JSON.parse(s.textContent),{actions:false,renderer:"svg"})
    .then(()=>{document.getElementById(s.dataset.target).dataset.drawn="yes";})));}
draw(document).catch(console.error);
// A run's histograms and charts count every score: they come after the page.
const later=$("#ef-run-charts");
if(later)fetch(later.dataset.src,{credentials:"same-origin"}).then(r=>{if(!r.ok)throw new Error("charts: "+r.status);return r.text();})
  .then(html=>{later.innerHTML=html;return draw(later);})
  .then(()=>{document.body.dataset.efCharts="drawn";}).catch(console.error);
// A comparison's bootstrap intervals take most of its time: they come after the page.
const stats=$("#ef-compare-stats");
if(stats)fetch(stats.dataset.src,{credentials:"same-origin"}).then(r=>{if(!r.ok)throw new Error("intervals: "+r.status);return r.text();})
  .then(html=>{stats.innerHTML=html;document.body.dataset.efIntervals="shown";}).catch(console.error);
// The labelling queue: one card at a time, driven by the keyboard.
const queue=$("#ef-queue");
if(queue){
  const cards=$$(".ef-label-card"),meta=JSON.parse($("#ef-queue-meta").textContent);
  let at=0;
  const show=i=>{at=Math.max(0,Math.min(cards.length-1,i));cards.forEach((c,k)=>{c.hidden=k!==at;});
    const done=cards.filter(c=>c.dataset.labelled).length;
    $("#ef-queue-progress").textContent=done+" of "+cards.length+" labelled";
    document.body.dataset.efQueueAt=String(at);};
  const card=()=>cards[at];
  async function save(value){
    const c=card();if(!c)return;
    const note=c.querySelector("textarea").value;
    const body={labels:[{run_id:meta.run_id,sample_id:c.dataset.sample,repetition:+c.dataset.rep,metric:meta.metric,label:value,note:note||null}]};
    const status=c.querySelector(".ef-label-status");status.textContent="saving…";
    const r=await fetch("/api/v1/labels",{method:"POST",headers:{"Content-Type":"application/json"},body:JSON.stringify(body),credentials:"same-origin"});
    const reply=await r.json();
    if(!r.ok){status.textContent="not saved: "+reply.message;status.className="ef-label-status ef-fail";return;}
    c.dataset.labelled=String(value);status.className="ef-label-status ef-pass";
    status.textContent="labelled "+(typeof value==="number"?"score "+value:value);
    document.body.dataset.efLabelled=String(cards.filter(x=>x.dataset.labelled).length);
    show(at+1);
  }
  function score(){const c=card();const v=c.querySelector("input.ef-score").value.trim();const x=Number(v);
    if(v===""||!(x>=0&&x<=1)){c.querySelector(".ef-label-status").textContent="a score is a number from 0 to 1";return;}save(x);}
  for(const c of cards){
    c.querySelector(".ef-do-pass").addEventListener("click",()=>save("pass"));
    c.querySelector(".ef-do-fail").addEventListener("click",()=>save("fail"));
    c.querySelector(".ef-do-score").addEventListener("click",score);
    c.querySelector("input.ef-score").addEventListener("keydown",ev=>{if(ev.key==="Enter"){ev.preventDefault();score();}});
  }
  document.addEventListener("keydown",ev=>{
    const t=ev.target;if(t.matches("textarea,input")){if(ev.key==="Escape")t.blur();return;}
    if(ev.ctrlKey||ev.metaKey||ev.altKey)return;
    const k=ev.key;
    if(k==="p")save("pass");else if(k==="f")save("fail");
    else if(k==="s"){ev.preventDefault();card().querySelector("input.ef-score").focus();}
    else if(k==="n"){ev.preventDefault();card().querySelector("textarea").focus();}
    else if(k==="j"||k==="ArrowRight")show(at+1);else if(k==="k"||k==="ArrowLeft")show(at-1);
    else return;
    ev.preventDefault();});
  show(0);document.body.dataset.efQueue="ready";
}
document.body.dataset.efReady="yes";
})();
"""


@functools.cache
def has_vega() -> bool:
    """Whether the Vega-Lite bundle is at hand (the ``viz`` extra)."""
    try:
        import vl_convert  # noqa: F401  (a probe for the viz extra)
    except ImportError:
        return False
    return True


@functools.cache
def _vega() -> str:
    import vl_convert

    bundle: str = vl_convert.javascript_bundle()  # type: ignore[call-arg]
    return bundle


def warm() -> None:
    """Build the chart bundle now (a few seconds, once per process), when there is one."""
    if has_vega():
        _vega()


def asset(name: str) -> tuple[str, str] | None:
    """(media type, text) of an asset, or None for any other name."""
    from evalframe.views._web._layout import stylesheet

    if name == "app.js":
        return "text/javascript", APP_JS
    if name == "view.css":
        return "text/css", stylesheet()
    if name == "vega.js" and has_vega():
        return "text/javascript", _vega()
    return None
