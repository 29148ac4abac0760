/* backpropviz pages: the caption's room, held at the tallest caption's (its label,
 * worked lines and rule as the window sets them), so that the stage keeps its size
 * from step to step: the drawing stays where it is, at its size, as the steps go by
 * (it shrank and grew as a caption gained or lost lines). Measured on copies of the
 * captions likeliest to be tallest (most lines, arrays of most rows, longest), laid
 * out together once, unseen, then removed, and again only when the window changes
 * size: an RNN's page of 400 steps took half a second to lay every caption out. A
 * caption taller still (one not measured, an open group's inner step, a practice
 * question) raises it when it shows. The caption still takes at most its share of the
 * window (#caption-box's max-height). */
window.bpvCaptionRoom = function (box, count, lines, fill) {
  "use strict";
  // count: how many captions; lines(i, across): about how many lines caption i takes,
  // `across` characters a line; fill(i, label, caption, rule): caption i in the three
  // parts of a copy. Returns hold(), to call as each caption is shown.
  var MEASURED = 12;
  var MOST = 0.36;  // (#caption-box's max-height, 36vh: a min-height past it would win)
  var held = { size: "", height: 0 };

  function tallest() {
    var font = parseFloat(getComputedStyle(box.querySelector(".caption")).fontSize);
    var across = box.clientWidth / (0.5 * font);  // (characters a line holds: an em is two)
    var likeliest = [];
    for (var i = 0; i < count; i++) { likeliest.push([i, lines(i, across)]); }
    likeliest.sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; });
    var probe = document.createElement("div");
    probe.className = "caption-probe";
    probe.setAttribute("aria-hidden", "true");
    var copies = likeliest.slice(0, MEASURED).map(function (pair) {
      var copy = document.createElement("div");
      var parts = ["step-label", "caption", "rule"].map(function (name) {
        var part = document.createElement("div");
        part.className = name;
        copy.appendChild(part);
        return part;
      });
      fill(pair[0], parts[0], parts[1], parts[2]);
      return copy;
    });
    copies.forEach(function (copy) { probe.appendChild(copy); });
    box.appendChild(probe);
    var height = copies.reduce(function (most, copy) {
      return Math.max(most, copy.getBoundingClientRect().height);
    }, 0);
    probe.remove();
    return height;
  }

  function hold() {
    var size = box.clientWidth + "x" + window.innerHeight;
    if (size !== held.size) { held = { size: size, height: tallest() }; }
    box.style.minHeight = "";
    held.height = Math.max(held.height, box.getBoundingClientRect().height);
    box.style.minHeight = Math.min(held.height, MOST * window.innerHeight) + "px";
  }
  window.addEventListener("resize", hold);
  return hold;
};

/* About how many lines a text of `text` takes, `across` characters a line. */
window.bpvCaptionRoom.lines = function (text, across) {
  "use strict";
  return String(text || "").split("\n").reduce(function (sum, line) {
    return sum + 1 + Math.floor(line.length / across);
  }, 0);
};

/* An op as a step's label names it: its symbol, and its name where that says more
 * ("× (mul)"; "sin", not "sin (sin)"). */
window.bpvCaptionRoom.opTitle = function (op) {
  "use strict";
  return op.symbol === op.op ? op.symbol : op.symbol + " (" + op.op + ")";
};
