// Keyboard moves on the patch page, as Gerrit users expect (the page
// works without this file; ? lists the keys): j/k the next/previous file
// or thread, n/p the next/previous file, r reply (the thread in view, or
// the review box), ? the list of keys.
(function () {
  "use strict";
  var at = -1;
  function targets(sel) { return Array.prototype.slice.call(document.querySelectorAll(sel)); }
  function move(sel, step) {
    var ts = targets(sel);
    if (ts.length === 0) { return; }
    var y = window.scrollY + 1, i;
    if (step > 0) {
      for (i = 0; i < ts.length && ts[i].getBoundingClientRect().top + window.scrollY <= y + 2; i++) {}
    } else {
      for (i = ts.length - 1; i >= 0 && ts[i].getBoundingClientRect().top + window.scrollY >= y - 2; i--) {}
    }
    if (i < 0 || i >= ts.length) { return; }
    at = i;
    ts[i].scrollIntoView({block: "start"});
    ts[i].classList.add("key-target");
    window.setTimeout(function () { ts[i].classList.remove("key-target"); }, 600);
  }
  function reply() {
    var ts = targets(".thread"), i;
    for (i = 0; i < ts.length; i++) {
      var r = ts[i].getBoundingClientRect();
      if (r.top >= 0 && r.top < window.innerHeight) {
        var d = ts[i].querySelector("details.reply");
        if (d) { d.open = true; d.querySelector("textarea").focus(); return; }
      }
    }
    var box = document.getElementById("review-body");
    if (box) { box.focus(); }
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (e.ctrlKey || e.metaKey || e.altKey || t === "INPUT" || t === "TEXTAREA" || t === "SELECT") { return; }
    switch (e.key) {
    case "j": move(".dfile, .thread", 1); break;
    case "k": move(".dfile, .thread", -1); break;
    case "n": move(".dfile", 1); break;
    case "p": move(".dfile", -1); break;
    case "r": reply(); break;
    case "?":
      var h = document.getElementById("keys-help");
      if (h) { h.open = !h.open; if (h.open) { h.scrollIntoView({block: "nearest"}); } }
      break;
    default: return;
    }
    e.preventDefault();
  });
}());
