// mnemo console: the only script the pages load (the Content-Security-Policy
// allows no other and no inline code). It does two things: asks before a
// form marked data-confirm is sent, and listens for live updates.
"use strict";

document.addEventListener("submit", (ev) => {
  const msg = ev.target.getAttribute && ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) ev.preventDefault();
});

// Live updates: the node sends a "changed" event naming a namespace this
// session may read whenever a write or a peer's delta changed it. A page
// with nothing typed into it reloads; otherwise a banner offers to.
function editing() {
  const el = document.activeElement;
  if (el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT")) return true;
  for (const f of document.querySelectorAll("form[method=post] textarea, form[method=post] input:not([type=hidden]):not([type=checkbox])")) {
    if (f.value !== f.defaultValue) return true;
  }
  return false;
}

// Reloads are spaced at least minGap apart (the time of the last one is
// kept in sessionStorage across the reload), so a node written to many
// times a second does not keep the page reloading.
const minGap = 3000;
let reloadTimer = null;
function changed() {
  if (editing()) {
    document.getElementById("changed").hidden = false;
    return;
  }
  if (reloadTimer !== null) return;
  const last = Number(window.sessionStorage.getItem("mnemo-reloaded") || 0);
  const wait = Math.min(minGap, Math.max(300, last + minGap - Date.now()));
  reloadTimer = window.setTimeout(() => {
    window.sessionStorage.setItem("mnemo-reloaded", String(Date.now()));
    window.location.reload();
  }, wait);
}

if (document.body.dataset.live === "on" && window.EventSource) {
  const dot = document.getElementById("live");
  const es = new EventSource("/ui/events");
  es.addEventListener("open", () => dot && dot.classList.add("on"));
  es.addEventListener("error", () => dot && dot.classList.remove("on"));
  es.addEventListener("changed", changed);
  const reload = document.getElementById("reload");
  if (reload) reload.addEventListener("click", (ev) => { ev.preventDefault(); window.location.reload(); });
}
