// Reckon inspector: progressive enhancement only (every page works without it).
// "expand all" / "collapse all" buttons open or close every <details> in a section.
"use strict";
document.addEventListener("click", function (ev) {
  var btn = ev.target.closest ? ev.target.closest("button.expand-all, button.collapse-all") : null;
  if (!btn) return;
  var root = document.getElementById(btn.getAttribute("data-target")) || document;
  var open = btn.classList.contains("expand-all");
  root.querySelectorAll("details").forEach(function (d) { d.open = open; });
});
// Open the proof tree named in the URL fragment (#derived opens the statuses).
window.addEventListener("DOMContentLoaded", function () {
  if (location.hash === "#derived") {
    document.querySelectorAll("#derived details.status-details").forEach(function (d) { d.open = true; });
  }
});
