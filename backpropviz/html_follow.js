/* backpropviz step-through page: the view follows the step. A drawing whose numbers are
 * too small to read when it is fitted to the window (a big graph) is framed step by step
 * instead, as the clip's camera frames it: the current op, its operands and its result,
 * as large as they fit, but their numbers no larger than a slide's. Step 0 and a step
 * without an op show the whole drawing. The "follow" button (or C) turns it on and off;
 * zooming, panning or fitting by hand turns it off. */
(function () {
  "use strict";
  var bpv = window.bpv;
  var svg = bpv.svg;
  var button = document.getElementById("follow");
  // A number's em on screen, in px: below READABLE the fitted drawing is followed; a
  // step is not zoomed past LARGEST. The frame leaves MARGIN of its size around the
  // step's parts, and glides to the next step in GLIDE ms.
  var READABLE = 14, LARGEST = 30, MARGIN = 0.15, GLIDE = 400;
  var following = false;
  var gliding = null;

  var scaleIn = bpv.scaleIn;  // the px of screen a unit of the drawing takes in a view

  // A number's em in units of the drawing (none drawn: never too small to read).
  var unitEm = bpv.numberEm || Infinity;

  /* The step's op (the current node), and the values at the ends of its edges. */
  function stepParts() {
    var ops = Array.prototype.slice.call(svg.querySelectorAll("g.node.current"));
    var ends = [];
    svg.querySelectorAll("g.edge.current").forEach(function (edge) {
      edge.id.replace(/#\d+$/, "").split("->").forEach(function (id) {
        var node = document.getElementById(id);
        if (node && ops.indexOf(node) < 0 && ends.indexOf(node) < 0) { ends.push(node); }
      });
    });
    return { ops: ops, ends: ends };
  }

  function boxOf(part) {
    var rect = part.getBoundingClientRect();
    var a = bpv.pointAt(rect.left, rect.top), b = bpv.pointAt(rect.right, rect.bottom);
    return { left: a.x, top: a.y, right: b.x, bottom: b.y };
  }

  function union(one, other) {
    return { left: Math.min(one.left, other.left), top: Math.min(one.top, other.top),
             right: Math.max(one.right, other.right), bottom: Math.max(one.bottom, other.bottom) };
  }

  /* The view that frames the step, in the stage's proportions (so that it fills the
   * stage), no larger than the fitted drawing and kept within it where it can: the op,
   * and of the values at its edges' ends, nearest first, each that leaves the numbers
   * readable (a value far away, as an RNN's earlier state, is left to its edge). */
  function frameOf(parts) {
    var fitted = bpv.fitted(), room = bpv.room();
    var aspect = room.h / room.w, em = unitEm * room.w;
    // (a view of the stage's proportions, w wide, shows an em as em / w px)
    function width(box) {
      return Math.max((box.right - box.left) * (1 + 2 * MARGIN),
        (box.bottom - box.top) * (1 + 2 * MARGIN) / aspect, em / LARGEST);
    }
    var box = parts.ops.map(boxOf).reduce(union);
    var centre = { x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2 };
    function distance(b) {
      return Math.hypot((b.left + b.right) / 2 - centre.x, (b.top + b.bottom) / 2 - centre.y);
    }
    parts.ends.map(boxOf).sort(function (a, b) { return distance(a) - distance(b); })
      .forEach(function (end) {
        var grown = union(box, end);
        if (em / width(grown) >= READABLE) { box = grown; }
      });
    var w = width(box);
    if (w >= fitted.w && w * aspect >= fitted.h) { return fitted; }
    var h = w * aspect;
    function within(start, size, from, room) {
      return size >= room ? from + (room - size) / 2
        : Math.max(from, Math.min(start, from + room - size));
    }
    return { x: within((box.left + box.right - w) / 2, w, fitted.x, fitted.w),
             y: within((box.top + box.bottom - h) / 2, h, fitted.y, fitted.h), w: w, h: h };
  }

  function glideTo(target) {
    if (gliding !== null) { cancelAnimationFrame(gliding); gliding = null; }
    var from = bpv.view();
    var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (still) { bpv.setView(target); return; }
    var start = performance.now();
    function frame(now) {
      var t = Math.min(1, (now - start) / GLIDE);
      var s = t * t * (3 - 2 * t);  // eased in and out
      bpv.setView({ x: from.x + (target.x - from.x) * s, y: from.y + (target.y - from.y) * s,
                    w: from.w + (target.w - from.w) * s, h: from.h + (target.h - from.h) * s });
      gliding = t < 1 ? requestAnimationFrame(frame) : null;
    }
    gliding = requestAnimationFrame(frame);
  }

  function show(on) {
    following = on;
    button.setAttribute("aria-pressed", on ? "true" : "false");
    document.getElementById("bpv").classList.toggle("following", on);
  }

  bpv.follow = function (now) {
    if (!following) { return; }
    var parts = now > 0 ? stepParts() : { ops: [] };
    glideTo(parts.ops.length ? frameOf(parts) : bpv.fitted());
  };
  bpv.byHand = function () {
    if (gliding !== null) { cancelAnimationFrame(gliding); gliding = null; }
    show(false);
  };
  bpv.toggleFollow = function () {
    show(!following);
    if (following) { bpv.follow(bpv.current()); } else { bpv.setView(bpv.fitted()); }
  };

  show(unitEm * scaleIn(bpv.fitted()) < READABLE);
  bpv.follow(bpv.current());
})();
