// amber web: keys, the seq slider, and keeping the chosen timeline row in view.
// Every key only follows a link the page already has (data-key="j ArrowDown"),
// so the page works without this script, with the mouse.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    var links = document.querySelectorAll("[data-key]");
    for (var i = 0; i < links.length; i++) {
      var keys = links[i].getAttribute("data-key").split(" ");
      if (keys.indexOf(event.key) !== -1) {
        event.preventDefault();
        links[i].click();
        return;
      }
    }
  });

  var slider = document.querySelector("input[data-seek]");
  if (slider) {
    var number = document.getElementById(slider.getAttribute("data-seek"));
    slider.addEventListener("input", function () {
      number.value = slider.value;
    });
    slider.addEventListener("change", function () {
      number.value = slider.value;
      number.form.submit();
    });
  }

  var pane = document.querySelector(".timeline.scroll");
  var chosen = pane && pane.querySelector("tr.sel");
  if (pane && chosen) {
    pane.scrollTop = chosen.offsetTop - pane.clientHeight / 2;
  }
})();
