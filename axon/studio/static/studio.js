// AXON Studio: small enhancements only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // A changed filter choice submits its form (without script: the Filter button).
  document.querySelectorAll("select.autosubmit").forEach(function (el) {
    el.addEventListener("change", function () { if (el.form) el.form.submit(); });
  });
  // "/" focuses the first text field of the page (search query, filters).
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (ev.key === "/" && tag !== "INPUT" && tag !== "TEXTAREA" && tag !== "SELECT") {
      var first = document.querySelector("main input[type=text]");
      if (first) { ev.preventDefault(); first.focus(); }
    }
  });
});
