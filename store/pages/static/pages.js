// evstore audit pages: optional enhancement only (every page works without it).
// Copy buttons copy the digest beside them. No inline script: CSP script-src 'self'.
"use strict";
document.documentElement.classList.add("js");
document.addEventListener("click", function (event) {
  var button = event.target.closest ? event.target.closest("button.copy") : null;
  if (!button || !navigator.clipboard) { return; }
  navigator.clipboard.writeText(button.getAttribute("data-copy") || "").then(function () {
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = "Copy"; }, 1500);
  });
});
