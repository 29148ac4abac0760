/* backpropviz step-through page: replays the backward pass recorded in #bpv-data.
 * The SVG is draw's picture of step 0; data.frames holds, for every node and edge
 * whose drawing changes, its drawing from the step it changes on (what differs from
 * its drawing at step 0). Step k shows draw's picture of step k. Nothing is computed
 * here: it is all in the data. */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("bpv-data").textContent);
  var root = document.getElementById("bpv");
  var svg = root.querySelector("#stage svg");
  var graph = svg.querySelector("g");
  /* A step of a group's inside carries the gradients it changed: the ones known at
   * step k are those of step k-1 with its changes. The page's own steps carry only
   * the seeds (step 0): each value's gradients are in data.details. */
  function known(list) {
    list.forEach(function (state, k) {
      if (k) { state.grads = Object.assign({}, list[k - 1].grads, state.grads); }
    });
  }
  known(data.steps);
  Object.keys(data.groups || {}).forEach(function (gid) { known(data.groups[gid].steps); });
  var steps = data.steps;
  var last = steps.length - 1;
  var slider = document.getElementById("slider");
  var counter = document.getElementById("counter");
  var playButton = document.getElementById("play");
  var tooltip = document.getElementById("tooltip");
  var current = 0;
  var timer = null;
  var shown = {};  // group id -> index of the version in the DOM
  // Each changing group's step-0 version is the one drawn in the SVG.
  // A version carries what differs from the one before: [head, tail, middle] is its
  // first `head` elements, then the elements `middle`, then its last `tail` elements.
  Object.keys(data.frames).forEach(function (id) {
    var group = byId(id);
    var parts = Array.prototype.map.call(group.children, function (part) {
      return part.outerHTML;
    });
    data.frames[id].forEach(function (version) {
      var patch = version[2];
      if (typeof patch === "string") { return; }
      parts = parts.slice(0, patch[0]).concat(patch[2], parts.slice(parts.length - patch[1]));
      version[2] = parts.join("");
    });
    data.frames[id].unshift([0, group.getAttribute("class"), group.innerHTML]);
    shown[id] = 0;
  });
  /* Hooks for html_groups.js (groups that open in place): the steps walked, the
   * drawing of a step, the address's extra parts and the fitted view can change. */
  var bpv = window.bpv = {
    data: data, svg: svg, graph: graph, draw: drawStep, hash: function () { return ""; },
    current: function () { return current; },
    go: function (step, how) { stop(); go(step, how); },
    setSteps: function (list) {
      steps = list; last = list.length - 1;
      slider.max = String(last); root.setAttribute("data-steps", String(last));
    },
    refit: function (extent) { refit(extent); bpv.follow(current); },
    /* For html_follow.js (the view following the step): the view, the fitted view, a
     * point of the screen in the drawing's units, and what the page calls on each
     * step and when the reader zooms, pans or fits by hand. */
    view: function () { return view; },
    fitted: function () { return fitted; },
    setView: function (next) { setView(next); },
    pointAt: function (x, y) { return pointAt(x, y); },
    scaleIn: function (v) { return scaleIn(v); },
    room: function () { return room; },
    follow: function () {},
    byHand: function () {}
  };

  function byId(id) { return document.getElementById(id); }

  /* Put every changing group into the version drawn for step `now`. */
  function drawStep(now) {
    Object.keys(data.frames).forEach(function (id) { drawAsAt(id, now); });
    graph.setAttribute("class", data.graphClasses[now]);
  }

  /* Draw group `id` (if it changes at all) as it is drawn at step `step`. */
  function drawAsAt(id, step) {
    var versions = data.frames[id];
    if (!versions) { return; }
    var index = 0;
    while (index + 1 < versions.length && versions[index + 1][0] <= step) { index++; }
    if (shown[id] === index) { return; }
    var group = byId(id);
    group.setAttribute("class", versions[index][1]);
    group.innerHTML = versions[index][2];
    shown[id] = index;
  }

  function svgElement(tag, attributes) {
    var element = document.createElementNS(SVG_NS, tag);
    Object.keys(attributes).forEach(function (key) {
      element.setAttribute(key, attributes[key]);
    });
    return element;
  }

  /* A contribution on an edge of the current op that draw leaves unlabelled
   * (draw labels a fork's edges only): a small table on the edge, where it covers
   * no box and no other label (placeLabel). Draw's layout kept no room for it.
   * A step's labels are made in three passes, so that the browser lays the drawing
   * out once for them, not once for each number measured or label placed: every
   * label's texts are added (makeLabel), then all are measured and placed, reading
   * only (placeMadeLabel), then written where they go (writeLabel). */
  function makeLabel(group, entry) {
    var path = group.querySelector("path");
    if (!path) { return null; }
    var label = svgElement("g", { "class": "overlay-label" });
    var box = svgElement("rect", { rx: 3 });
    label.appendChild(box);
    group.appendChild(label);
    var placed = [];
    entry.cells.forEach(function (row, r) {
      row.forEach(function (cell, c) {
        var dead = entry.dead && entry.dead[r][c];
        var text = svgElement("text", {
          "class": dead ? "dead" : "", "text-anchor": "end",
          "font-family": "Helvetica,Arial,sans-serif",
          "font-size": data.theme.labelPt, "fill": dead ? data.theme.deadText : data.theme.grad
        });
        text.textContent = cell;
        label.appendChild(text);
        placed.push({ text: text, row: r, column: c });
      });
    });
    return { path: path, label: label, box: box, placed: placed, rows: entry.cells.length };
  }

  var LABEL_PAD = 3, LABEL_GAP = 6;

  function placeMadeLabel(made, taken) {
    var widths = made.widths = [];
    made.placed.forEach(function (item) {
      widths[item.column] = Math.max(widths[item.column] || 0,
        item.text.getComputedTextLength());
    });
    made.line = data.theme.labelPt + 2;
    made.width = widths.reduce(function (a, b) { return a + b; }, 0) +
      LABEL_GAP * (widths.length - 1) + 2 * LABEL_PAD;
    made.height = made.rows * made.line + 2 * LABEL_PAD;
    made.spot = placeLabel(made.path, made.width, made.height, taken);
    made.left = made.spot.x - made.width / 2;
    made.top = made.spot.y - made.height / 2;
    taken.push({ left: made.left, top: made.top, right: made.left + made.width,
                 bottom: made.top + made.height });
    made.taken = taken[taken.length - 1];
  }

  function writeLabel(made) {
    var left = made.left, top = made.top;
    if (made.spot.from) {  // off its edge: a thin line from the label to the edge
      var end = nearestOnBox(made.spot.from, made.taken);
      made.label.insertBefore(svgElement("path", {
        "class": "overlay-leader", fill: "none", stroke: data.theme.grad,
        "stroke-width": 1, "stroke-dasharray": "2 2",
        d: "M" + made.spot.from.x.toFixed(2) + "," + made.spot.from.y.toFixed(2) +
          "L" + end.x.toFixed(2) + "," + end.y.toFixed(2)
      }), made.box);
    }
    made.placed.forEach(function (item) {
      var right = left + LABEL_PAD;
      for (var c = 0; c <= item.column; c++) { right += made.widths[c] + (c ? LABEL_GAP : 0); }
      item.text.setAttribute("x", right.toFixed(2));
      item.text.setAttribute("y", (top + LABEL_PAD + (item.row + 1) * made.line - 3).toFixed(2));
    });
    made.box.setAttribute("x", left.toFixed(2));
    made.box.setAttribute("y", top.toFixed(2));
    made.box.setAttribute("width", made.width.toFixed(2));
    made.box.setAttribute("height", made.height.toFixed(2));
  }

  /* The boxes a label must not cover: every node's outline (boxes, ops, the badges
   * shown), in the drawing's coordinates, and the drawing's own bounds. */
  function obstacles() {
    var found = [];
    svg.querySelectorAll("g.node").forEach(function (node) {
      if (node.classList.contains("pending-contribution") ||
          getComputedStyle(node).display === "none") { return; }
      var outline = node.querySelector("path, polygon, ellipse");
      if (!outline) { return; }
      var b = outline.getBBox();
      found.push({ left: b.x, top: b.y, right: b.x + b.width, bottom: b.y + b.height });
    });
    return found;
  }

  var LABEL_MARGIN = 2;  // the room kept between a label and a box (drawing units)

  function overlaps(a, b) {
    return a.left < b.right + LABEL_MARGIN && b.left < a.right + LABEL_MARGIN &&
      a.top < b.bottom + LABEL_MARGIN && b.top < a.bottom + LABEL_MARGIN;
  }

  /* Where a label of this size goes: centred on its edge, the middle first, then
   * further along it either way; where every place on the edge covers a box, the
   * free place nearest the edge's middle, off it (``from``: the point it points at). */
  function placeLabel(path, width, height, taken) {
    var total = path.getTotalLength();
    var bounds = graph.querySelector("polygon").getBBox();
    function free(x, y) {
      var rect = { left: x - width / 2, top: y - height / 2,
                   right: x + width / 2, bottom: y + height / 2 };
      if (rect.left < bounds.x || rect.top < bounds.y || rect.right > bounds.x + bounds.width ||
          rect.bottom > bounds.y + bounds.height) { return false; }
      return !taken.some(function (other) { return overlaps(rect, other); });
    }
    for (var i = 0; i <= 16; i++) {
      var along = 0.5 + (i % 2 ? 1 : -1) * Math.ceil(i / 2) / 40;
      var point = path.getPointAtLength(total * along);
      if (free(point.x, point.y)) { return { x: point.x, y: point.y }; }
    }
    var middle = path.getPointAtLength(total / 2);
    var step = Math.max(4, height / 4);
    var far = Math.max(bounds.width, bounds.height);
    for (var radius = step; radius < far; radius += step) {
      var turns = Math.max(8, Math.ceil(2 * Math.PI * radius / step));
      for (var t = 0; t < turns; t++) {
        var angle = 2 * Math.PI * t / turns;
        var x = middle.x + radius * Math.cos(angle), y = middle.y + radius * Math.sin(angle);
        if (free(x, y)) { return { x: x, y: y, from: middle }; }
      }
    }
    return { x: middle.x, y: middle.y };  // (no free place in the drawing: on the edge)
  }

  function nearestOnBox(point, box) {
    return { x: Math.min(Math.max(point.x, box.left), box.right),
             y: Math.min(Math.max(point.y, box.top), box.bottom) };
  }

  function showContributions(now) {
    svg.querySelectorAll(".overlay-label").forEach(function (label) { label.remove(); });
    var made = [];
    steps[now].edges.forEach(function (id) {
      var group = byId(id);
      var entry = data.contributions[id];
      var labelled = group.classList.contains("contribution") ||
        group.classList.contains("pending-contribution");
      var label = entry && !labelled ? makeLabel(group, entry) : null;
      if (label) { made.push(label); }
    });
    var taken = obstacles();  // (the labels are on edges: none is a node's outline)
    made.forEach(function (label) { placeMadeLabel(label, taken); });
    made.forEach(writeLabel);
  }

  function showCaption(now) {
    var step = steps[now];
    byId("step-label").textContent = stepLabel(now);
    typesetCaption(byId("caption"), step);
    byId("rule").textContent = step.rule;
  }

  var opTitle = window.bpvCaptionRoom.opTitle;

  function stepLabel(now) {
    var step = steps[now];
    var label;
    if (now === 0) {
      label = "Step 0 of " + last + ": the forward values" +
        (Object.keys(step.grads).length ? " and the seed" : "");
    } else if (step.op === null) {  // a rolled loop's closing step: no op of the drawing
      label = "Step " + now + " of " + last + ": " + step.title;
    } else {
      var op = data.ops[step.op];
      label = "Step " + now + " of " + last + ": " + opTitle(op);
    }
    return label;
  }

  /* The caption's room held at the tallest step's (caption_room.js). */
  var holdCaptionRoom = window.bpvCaptionRoom(byId("caption-box"), steps.length, lines,
    function (k, label, caption, rule) {
      label.textContent = stepLabel(k);
      typesetCaption(caption, steps[k]);
      rule.textContent = steps[k].rule;
    });
  /* About how many lines step k's caption and rule take, `across` characters a line:
   * an array's rows each a line, a line too long for the window wrapped. */
  function lines(k, across) {
    var step = steps[k];
    var count = window.bpvCaptionRoom.lines(step.rule, across);
    if (!step.typeset) { return count + window.bpvCaptionRoom.lines(step.caption, across); }
    step.typeset.forEach(function (line) {
      var rows = 1, characters = 0;
      line.forEach(function (run) {
        if (run[0] === "array") {
          rows = Math.max(rows, run[1].length);
          characters += run[1][0].join("  ").length + 2;
        } else { characters += run[1].length; }
      });
      count += rows + Math.floor(characters / across);
    });
    return count;
  }

  /* A step's worked lines typeset as the figures set them (data: typeset.caption_runs):
   * a one-letter name in italics, an index lowered, an array in brackets; the plain
   * text where none is given (an open group's inner steps). */
  function typesetCaption(element, step) {
    element.textContent = "";
    if (!step.typeset) { element.textContent = step.caption; return; }
    step.typeset.forEach(function (line, index) {
      if (index) { element.appendChild(document.createTextNode("\n")); }
      line.forEach(function (run) {
        var kind = run[0], text = run[1];
        if (kind === "array") { element.appendChild(matrix(run[1], run[2])); return; }
        var node = kind === "index" ? document.createElement("sub") :
          kind === "name" && text.length === 1 ? document.createElement("i") : null;
        if (node) { node.textContent = text; element.appendChild(node); }
        else { element.appendChild(document.createTextNode(text)); }
      });
    });
  }

  /* An array as the boxes draw one, its rows of numbers between brackets (drawn from
   * data-entry: the caption's text stays as written, [0, 0; 2, 4], for reading
   * aloud and copying). */
  function matrix(rows, written) {
    var run = document.createElement("span"), grid = document.createElement("span");
    var said = document.createElement("span");
    run.className = "array";
    grid.className = "grid";
    grid.setAttribute("aria-hidden", "true");
    grid.style.gridTemplateColumns = "repeat(" + rows[0].length + ", auto)";
    rows.forEach(function (row) {
      row.forEach(function (entry) {
        var cell = document.createElement("span");
        cell.dataset.entry = entry;
        grid.appendChild(cell);
      });
    });
    said.className = "written";
    said.textContent = written;
    run.appendChild(grid);
    run.appendChild(said);
    return run;
  }

  /* The bytes kept for backward after this step, and the values kept, marked in the graph. */
  function showMemory(now) {
    var memory = data.memory;
    if (!memory.bytes.length || !memoryOn) { return; }
    byId("memory-text").textContent = memory.text[now];
    byId("memory-fill").style.width = memory.fill[now] + "%";
    svg.querySelectorAll("g.node.held, g.node.freed").forEach(function (node) {
      node.classList.remove("held", "freed");
    });
    function mark(className) {
      return function (id) {
        var node = byId(id);  // (the figure's saved mark: a constant has none, unless shown)
        if (node && node.classList.contains("stored")) { node.classList.add(className); }
      };
    }
    memory.held[now].forEach(mark("held"));
    memory.freed[now].forEach(mark("freed"));
    root.querySelectorAll("#memory-spark .now").forEach(function (bar) {
      bar.classList.remove("now");
    });
    byId(memory.spark[now]).classList.add("now");
  }

  /* Step `step`; the address follows (#step=N, a new history entry, so that Back
   * returns to the step before), unless the step came from the address itself
   * (how = "address") or from playing or practising (one entry for the whole play,
   * or the whole exercise). In practice the step goes no further than the question. */
  function go(step, how) {
    var now = Math.max(0, Math.min(reach(), step));
    bpv.draw(now);
    showContributions(now);
    showCaption(now);
    showMemory(now);
    current = now;
    showPractice(now);
    bridgePendingBadges();
    frameDeadLabels();
    holdCaptionRoom();
    measureRoom();
    bpv.follow(now);
    root.setAttribute("data-step", String(now));
    slider.value = String(now);
    counter.textContent = now + " / " + last;
    var hash = "#step=" + now + bpv.hash();
    if (how !== "address" && window.location.hash !== hash) {
      if (how === "play" || how === "practice") { history.replaceState(null, "", hash); }
      else { history.pushState(null, "", hash); }
    }
  }

  function stepInAddress() {
    var found = /step=(\d+)/.exec(window.location.hash);
    return found ? Number(found[1]) : 0;
  }
  window.addEventListener("popstate", function () { stop(); go(stepInAddress(), "address"); });
  window.addEventListener("hashchange", function () {
    if (stepInAddress() !== current) { stop(); go(stepInAddress(), "address"); }
  });

  /* The view: the part of the drawing that fills the stage. The drawing is laid out
   * once, at a size where its numbers are as large as a slide's (LAID_OUT_EM px), and
   * moved and scaled into the stage by a CSS transform (placeDrawing). Zooming by its
   * viewBox instead had the browser lay every text of the drawing out again at each
   * step, drag and resize: 70 ms each on an LSTM cell's page; a transform is only
   * painted. (Laid out at a unit a px, a big graph's type, which graphviz scales down
   * to a third of a px, lost short names and measured twice as wide as it is.) The
   * stage's size is kept as it changes (a window resized, a caption of more lines),
   * so that placing the drawing reads nothing. */
  var LAID_OUT_EM = 20;
  var stage = byId("stage");
  var box = svg.viewBox.baseVal;
  var fitted = { x: box.x, y: box.y, w: box.width, h: box.height };
  var view = { x: fitted.x, y: fitted.y, w: fitted.w, h: fitted.h };
  var drawn;  // the drawing's own box (its viewBox): where the transform starts
  var room = stageSize();  // (px, to the fraction: the frames the view follows with are cut fine)
  function stageSize() {
    var rect = stage.getBoundingClientRect();
    return { w: rect.width, h: rect.height };
  }
  var numberEm = (function () {  // a number's em in units of the drawing (0: none drawn)
    // (a number's text inherits the drawing's font; a name's is set in Times)
    var number = svg.querySelector("g.node.value text:not([font-family])");
    var placed = graph.transform.baseVal.consolidate();  // (graphviz's scale of the graph)
    var em = number ? Number(number.getAttribute("font-size")) *
      (placed ? Math.hypot(placed.matrix.a, placed.matrix.b) : 1) : 0;
    return em > 0 && isFinite(em) ? em : 0;
  })();
  bpv.numberEm = numberEm;  // (html_follow.js: whether the fitted drawing is readable)
  var laidOut = numberEm ? Math.max(1, LAID_OUT_EM / numberEm) : 1;  // px a unit, laid out
  function layOut(extent) {
    drawn = { x: extent.x, y: extent.y, w: extent.w, h: extent.h };
    svg.setAttribute("viewBox", [drawn.x, drawn.y, drawn.w, drawn.h].map(function (n) {
      return n.toFixed(2);
    }).join(" "));
    svg.setAttribute("width", (drawn.w * laidOut).toFixed(2));
    svg.setAttribute("height", (drawn.h * laidOut).toFixed(2));
  }
  layOut(fitted);
  /* The px of screen a unit of the drawing takes in view `v`: the view fitted into the
   * stage whole, centred where the stage's proportions are not its own. */
  function scaleIn(v) { return Math.min(room.w / v.w, room.h / v.h); }
  function placeDrawing() {
    var s = scaleIn(view);
    var x = (room.w - view.w * s) / 2 - (view.x - drawn.x) * s;
    var y = (room.h - view.h * s) / 2 - (view.y - drawn.y) * s;
    svg.style.transform = "translate(" + x.toFixed(2) + "px," + y.toFixed(2) + "px) scale(" +
      (s / laidOut).toPrecision(6) + ")";
  }
  function setView(next) {
    // (a stage with no room, as a caption taller than the window leaves it, frames
    // nothing: the view stays as it is, not NaN)
    if (![next.x, next.y, next.w, next.h].every(isFinite) || next.w <= 0 || next.h <= 0) {
      return;
    }
    view = next;
    placeDrawing();
    root.classList.toggle("zoomed", Math.abs(view.w - fitted.w) > 1e-6 * fitted.w ||
      Math.abs(view.x - fitted.x) > 1e-3 || Math.abs(view.y - fitted.y) > 1e-3);
  }
  /* The stage's size read again: where it changed (a window resized, a step's caption
   * of more lines or fewer), the drawing placed again. The page reads it as a step is
   * shown (the view following it frames the step for the stage as it is now); the
   * browser tells it of every other change before it paints. */
  function measureRoom() {
    var size = stageSize();
    if (size.w === room.w && size.h === room.h) { return; }
    room = size;
    placeDrawing();
  }
  new ResizeObserver(measureRoom).observe(stage);
  placeDrawing();
  /* A drawing grown past its own box (a group opened in place) is laid out again in
   * its new box, once. */
  function refit(extent) {
    if (extent.x < drawn.x || extent.y < drawn.y || extent.x + extent.w > drawn.x + drawn.w ||
        extent.y + extent.h > drawn.y + drawn.h) { layOut(extent); }
    fitted = extent;
    fit();
  }
  function fit() { setView({ x: fitted.x, y: fitted.y, w: fitted.w, h: fitted.h }); }
  function pointAt(clientX, clientY) {
    var point = svg.createSVGPoint();
    point.x = clientX; point.y = clientY;
    return point.matrixTransform(svg.getScreenCTM().inverse());
  }
  /* Zoom by `factor` (> 1: in) keeping the point under (clientX, clientY) in place: in
   * until a number is CLOSEST_EM px, or the view a 40th of the drawing where that is
   * closer (a big graph's numbers, a third of a px fitted, are read 100 times nearer);
   * out until the drawing is half the stage. */
  var CLOSEST_EM = 60;
  function zoomAt(clientX, clientY, factor) {
    bpv.byHand();
    var p = pointAt(clientX, clientY);
    var closest = numberEm ? CLOSEST_EM / (numberEm * scaleIn(fitted)) : 0;  // (× fitted)
    var w = Math.max(fitted.w / Math.max(40, closest), Math.min(fitted.w * 2, view.w / factor));
    var k = view.w / w;
    setView({ x: p.x - (p.x - view.x) / k, y: p.y - (p.y - view.y) / k, w: w, h: view.h / k });
  }
  function panBy(dxScreen, dyScreen) {
    bpv.byHand();
    var scale = scaleIn(view);
    setView({ x: view.x - dxScreen / scale, y: view.y - dyScreen / scale, w: view.w, h: view.h });
  }
  function zoomCentre(factor) {
    var rect = stage.getBoundingClientRect();
    zoomAt(rect.left + rect.width / 2, rect.top + rect.height / 2, factor);
  }
  stage.addEventListener("wheel", function (event) {
    event.preventDefault();
    // A trackpad's pinch arrives as a wheel with ctrlKey, in finer steps.
    var speed = event.ctrlKey ? 0.01 : 0.0015;
    zoomAt(event.clientX, event.clientY, Math.exp(-event.deltaY * speed));
    tooltip.hidden = true;
    pointerStill = true;
  }, { passive: false });
  var pointers = {};  // pointer id -> last client position: one drags, two pinch
  function spread() {
    var ids = Object.keys(pointers);
    var a = pointers[ids[0]], b = pointers[ids[1]];
    return { d: Math.hypot(a.x - b.x, a.y - b.y), x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  }
  stage.addEventListener("pointerdown", function (event) {
    if (event.button !== 0) { return; }
    pointers[event.pointerId] = { x: event.clientX, y: event.clientY };
    stage.setPointerCapture(event.pointerId);
    stage.classList.add("dragging");
  });
  stage.addEventListener("pointermove", function (event) {
    var before = pointers[event.pointerId];
    if (!before) { return; }
    var count = Object.keys(pointers).length;
    var was = count === 2 ? spread() : null;
    pointers[event.pointerId] = { x: event.clientX, y: event.clientY };
    if (count === 1) {
      panBy(event.clientX - before.x, event.clientY - before.y);
    } else if (count === 2) {
      var now = spread();
      panBy(now.x - was.x, now.y - was.y);
      if (was.d > 0) { zoomAt(now.x, now.y, now.d / was.d); }
    }
    tooltip.hidden = true;
  });
  function release(event) {
    delete pointers[event.pointerId];
    if (!Object.keys(pointers).length) { stage.classList.remove("dragging"); }
  }
  stage.addEventListener("pointerup", release);
  stage.addEventListener("pointercancel", release);
  function fitByHand() { bpv.byHand(); fit(); }
  stage.addEventListener("dblclick", fitByHand);

  function fullScreen() {
    if (document.fullscreenElement) { document.exitFullscreen(); }
    else if (root.requestFullscreen) { root.requestFullscreen(); }
  }

  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    playButton.textContent = "▶ play";
    root.classList.remove("playing");
  }

  function play() {
    if (last === 0) { return; }
    if (current >= last) { go(0); }
    playButton.textContent = "❚❚ pause";
    root.classList.add("playing");
    timer = setInterval(function () {
      if (current >= last) { stop(); } else { go(current + 1, "play"); }
    }, 1500);
  }

  function toggle() { if (timer === null) { play(); } else { stop(); } }
  function jump(to) { stop(); go(to); }

  var actions = {
    first: function () { jump(0); },
    prev: function () { jump(current - 1); },
    play: toggle,
    next: function () { jump(current + 1); },
    last: function () { jump(last); },
    fit: fitByHand,
    follow: function () { bpv.toggleFollow(); },
    fullscreen: fullScreen
  };
  Object.keys(actions).forEach(function (id) {
    byId(id).addEventListener("click", function (event) {
      actions[id]();
      // After a mouse click the keyboard belongs to the page again (space = play).
      if (event.detail > 0) { event.currentTarget.blur(); }
    });
  });
  slider.addEventListener("input", function () { jump(Number(slider.value)); });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = event.target;
    // Typing an answer, or choosing one: the keys are the field's, not the page's.
    if (target.closest && target.closest("#practice")) { return; }
    if (target === slider && /^(Arrow|Home|End|Page)/.test(event.key)) { return; }
    if (target.tagName === "BUTTON" && (event.key === " " || event.key === "Enter")) { return; }
    var handled = true;
    switch (event.key) {
      case "ArrowRight": case "ArrowDown": case "PageDown": actions.next(); break;
      case "ArrowLeft": case "ArrowUp": case "PageUp": actions.prev(); break;
      case " ": case "Spacebar": toggle(); break;
      case "Home": actions.first(); break;
      case "End": actions.last(); break;
      case "f": case "F": fullScreen(); break;
      case "m": case "M": toggleMemory(); break;
      case "0": fitByHand(); break;
      case "c": case "C": actions.follow(); break;
      case "+": case "=": zoomCentre(1.25); break;
      case "-": zoomCentre(0.8); break;
      default: handled = false;
    }
    if (handled) { event.preventDefault(); }
  });

  /* Hover: a value whole, and its gradient as known at this step. */
  function table(cells, className) {
    var element = document.createElement("table");
    element.className = className;
    cells.forEach(function (row) {
      var tr = element.insertRow();
      row.forEach(function (cell) { tr.insertCell().textContent = cell; });
    });
    return element;
  }

  function column(title, content) {
    var box = document.createElement("div");
    var heading = document.createElement("h4");
    heading.textContent = title;
    box.append(heading, content);
    return box;
  }

  function describe(id) {
    tooltip.textContent = "";
    var value = data.values[id];
    var op = data.ops[id];
    var name = document.createElement("div");
    name.className = "name";
    var meta = document.createElement("div");
    meta.className = "meta";
    if (value) {
      name.textContent = value.name;
      meta.textContent = value.role + ", " + (value.shape.length ?
        "shape (" + value.shape.join(", ") + (value.shape.length === 1 ? ",)" : ")") :
        "scalar");
      var arrays = document.createElement("div");
      arrays.className = "arrays";
      arrays.appendChild(column("value", table(value.data, "data")));
      var grad = gradientShown(id);
      var content;
      if (grad) {
        content = table(grad, "grad");
      } else {
        content = document.createElement("div");
        content.className = "none";
        content.textContent = "not computed yet";
      }
      arrays.appendChild(column("gradient", content));
      tooltip.append(name, meta, arrays, sources(id));
    } else if (op) {
      name.textContent = op.symbol;
      meta.textContent = op.op + " → " + data.values[op.result].name;
      tooltip.append(name, meta);
    }
  }

  /* The tooltip beside the pointer (or beside a value the keyboard reached: `left`,
   * where it goes when there is no room right of it, is the value's left side, so that
   * it never covers the value it describes). */
  function place(event) {
    var left = event.left === undefined ? event.clientX : event.left;
    var x = event.clientX + 16, y = event.clientY + 16;
    // (measured at the window's corner: near its right edge the box would be measured
    // as narrow as the room left there, and then overrun it)
    tooltip.style.left = tooltip.style.top = "0px";
    var width = tooltip.offsetWidth, height = tooltip.offsetHeight;
    if (x + width > window.innerWidth - 4) { x = left - width - 16; }
    if (y + height > window.innerHeight - 4) { y = event.clientY - height - 16; }
    // In the window whichever way it went (a value at its edge has its pointer there).
    x = Math.max(4, Math.min(x, window.innerWidth - width - 4));
    y = Math.max(4, Math.min(y, window.innerHeight - height - 4));
    tooltip.style.left = x + "px";
    tooltip.style.top = y + "px";
  }

  /* The tooltip follows the pointer's own moves: not a drag's, nor the drawing moving
   * under a pointer held still (a wheel's zoom), where it chased every value passing
   * under it and had the page lay it out again at each notch; it comes back with the
   * pointer's next move. */
  var pointerStill = false;
  function hover(event) {
    var node = event.target.closest("g.node");
    if (!node) { tooltip.hidden = true; return; }
    describe(node.id);
    tooltip.hidden = false;
    place(event);
  }
  svg.addEventListener("mouseover", function (event) {
    if (!pointerStill && !Object.keys(pointers).length) { hover(event); }
  });
  svg.addEventListener("mousemove", function (event) {
    if (pointerStill && (event.movementX || event.movementY)) {
      pointerStill = false;
      if (!Object.keys(pointers).length) { hover(event); }
    } else if (!tooltip.hidden) { place(event); }
  });
  svg.addEventListener("mouseleave", function () { tooltip.hidden = true; });

  /* Hover or focus: where a value's gradient came from, each share by the op it came
   * back through, up to the step shown (the gradient as the page shows it now). */
  function shownAt(id) {
    var hiding = practising(current) && !practice.revealed[id] &&
      (steps[current].updated.indexOf(id) >= 0 || steps[current].edges.indexOf(id) >= 0);
    return hiding ? current - 1 : current;
  }

  function gradientShown(id) {
    if (!data.details[id]) { return steps[current].grads[id] || null; }  // (inside an open group)
    var found = null;
    data.details[id].grads.forEach(function (version) {
      if (version[0] <= shownAt(id)) { found = version[1]; }
    });
    return found;
  }

  /* The gradient step `step` left a value with (a share that reads the same is not
   * carried twice: its share is null). */
  function leftAt(id, step) {
    return data.details[id].grads.filter(function (version) { return version[0] === step; })[0][1];
  }

  function sources(id) {
    var list = document.createElement("ul");
    list.className = "sources";
    (data.details[id] ? data.details[id].sources : []).forEach(function (source) {
      if (source.step > (source.edge ? shownAt(source.edge) : current)) { return; }
      var item = document.createElement("li");
      var op = source.op && data.ops[source.op];
      // (a rolled loop's repetitions not drawn are said: source.said)
      item.textContent = (op ? "from " + op.symbol + " (" + op.op + " → " +
        data.values[op.result].name + (source.operand ? ", operand " + source.operand : "") +
        "), step " + source.step + ": " : source.said ? "from " + source.said + ", step " +
        source.step + (source.share && !source.share.length ? "" : ": ") : "the seed: ") +
        (source.share || leftAt(id, source.step)).map(function (row) {
          return row.join(", ");
        }).join("; ");
      list.appendChild(item);
    });
    if (list.children.length > 1) {
      var sum = document.createElement("li");
      sum.className = "sum";
      sum.textContent = "the gradient is their sum";
      list.appendChild(sum);
    }
    return list;
  }

  /* Values take the keyboard's focus too (Tab), and say what they are. */
  svg.setAttribute("role", "group");
  svg.setAttribute("aria-label", "the graph of the computation; Tab moves to its values");
  svg.querySelectorAll("g.node.value").forEach(function (node) {
    node.setAttribute("tabindex", "0");
    node.setAttribute("aria-label", data.values[node.id].name);
  });
  svg.addEventListener("focusin", function (event) {
    var node = event.target.closest("g.node.value");
    // (A press of the mouse focuses the value under the pointer, which the pointer's
    // own tooltip describes already: a drag begun there flashed a second one.)
    if (!node || !node.matches(":focus-visible")) { return; }
    bringIntoView(node);  // (Tab's; not a click's)
    describe(node.id);
    tooltip.hidden = false;
    var rect = node.getBoundingClientRect();
    place({ clientX: rect.right, clientY: rect.top, left: rect.left });
  });
  svg.addEventListener("focusout", function () { tooltip.hidden = true; });

  /* A value the keyboard moves to, outside the stage, is brought into it: the view
   * panned (not zoomed) to put it in the middle. (The stage never scrolls: it clips.) A
   * value a press of the mouse focuses is where the reader is looking already: a drag
   * begun on one that stands half off the stage pans from where it was. */
  function bringIntoView(node) {
    var rect = node.getBoundingClientRect(), frame = stage.getBoundingClientRect();
    if (rect.left >= frame.left && rect.right <= frame.right && rect.top >= frame.top &&
        rect.bottom <= frame.bottom) { return; }
    panBy(frame.left + frame.width / 2 - (rect.left + rect.width / 2),
          frame.top + frame.height / 2 - (rect.top + rect.height / 2));
  }

  /* A fork's contribution is drawn on its edge from its step on; before, the edge
   * runs through where it will be, without an empty badge. */
  function bridgePendingBadges() {
    // Every bridge's ends read, then every bridge added: a bridge added before the next
    // is read would have the browser lay the drawing out again for each (an LSTM cell's
    // page: 1.3 s of its 2 s to open).
    var bridges = [];
    svg.querySelectorAll("g.badge.pending-contribution").forEach(function (badge) {
      if (badge.querySelector(".badge-bridge")) { return; }
      var into = byId(badge.id + "/in"), out = byId(badge.id + "/out");
      var from = into && into.querySelector("path"), to = out && out.querySelector("path");
      if (!from || !to) { return; }
      bridges.push({ badge: badge, from: from, a: from.getPointAtLength(from.getTotalLength()),
                     b: to.getPointAtLength(0) });
    });
    bridges.forEach(function (bridge) {
      var a = bridge.a, b = bridge.b;
      bridge.badge.appendChild(svgElement("path", {
        "class": "badge-bridge", fill: "none", stroke: bridge.from.getAttribute("stroke"),
        "stroke-width": bridge.from.getAttribute("stroke-width") || "1",
        d: "M" + a.x.toFixed(2) + "," + a.y.toFixed(2) + "L" + b.x.toFixed(2) + "," +
          b.y.toFixed(2)
      }));
    });
  }

  /* A dead entry on the page's own labels framed too, as draw frames its own. */
  function frameDeadLabels() {
    var dead = Array.prototype.slice.call(svg.querySelectorAll(".overlay-label text.dead"));
    var boxes = dead.map(function (text) { return text.getBBox(); });  // (read, then write)
    dead.forEach(function (text, i) {
      var box = boxes[i];
      text.parentNode.insertBefore(svgElement("rect", {
        "class": "dead-frame", x: (box.x - 1).toFixed(2), y: (box.y - 1).toFixed(2),
        width: (box.width + 2).toFixed(2), height: (box.height + 2).toFixed(2)
      }), text);
    });
  }

  /* The memory overlay: off until asked for (the button, or M). */
  var memoryOn = false;
  var memoryToggle = byId("memory-toggle");
  function toggleMemory() {
    if (!memoryToggle) { return; }
    memoryOn = !memoryOn;
    memoryToggle.setAttribute("aria-pressed", String(memoryOn));
    byId("memory").hidden = !memoryOn;
    if (!memoryOn) {
      svg.querySelectorAll("g.node.held, g.node.freed").forEach(function (node) {
        node.classList.remove("held", "freed");
      });
    }
    showMemory(current);
  }
  if (memoryToggle) {
    memoryToggle.addEventListener("click", function (event) {
      toggleMemory();
      if (event.detail > 0) { event.currentTarget.blur(); }
    });
  }

  /* ---------------------------------------------------------------- practice
   * The gradients hidden, each backward step asks for the ones it produces
   * (data.practice[k], built by practice.py), in the order of its caption. Until
   * a question is answered, what it asks about is drawn as at the step before. */
  var practice = data.practice ? {
    frontier: 0, question: 0, tries: 0, results: [], revealed: {}, answered: [],
    waiting: false, done: false
  } : null;
  var panel = byId("practice");
  var answerField = byId("answer");
  var feedback = byId("practice-feedback");
  var choices = byId("practice-choices");
  // The pieces of an edge drawn through a badge, by the edge's id.
  var pieces = {};
  Object.keys(data.frames).forEach(function (id) {
    var slash = id.lastIndexOf("/");
    if (slash > 0) { (pieces[id.slice(0, slash)] = pieces[id.slice(0, slash)] || []).push(id); }
  });

  function reach() { return practice && !practice.done ? practice.frontier : last; }
  function practising(now) {
    return practice !== null && !practice.done && now === practice.frontier;
  }
  function question() { return data.practice[practice.frontier][practice.question]; }

  /* The step after `step` that asks something; past the last, the end. */
  function nextAsking(step) {
    var next = step + 1;
    while (next <= last && !data.practice[next].length) { next++; }
    return next;
  }

  function hideUnanswered(now) {
    steps[now].updated.concat(steps[now].edges).forEach(function (id) {
      if (practice.revealed[id]) { return; }
      [id].concat(pieces[id] || []).forEach(function (part) { drawAsAt(part, now - 1); });
      var label = byId(id) && byId(id).querySelector(".overlay-label");
      if (label) { label.remove(); }
    });
  }

  function showPractice(now) {
    if (!practice) { return; }
    var form = byId("practice-form");
    var score = byId("practice-score");
    score.hidden = !practice.done;
    form.hidden = !practising(now);
    if (practice.done) { return; }
    if (!practising(now)) {
      feedback.textContent = "The question waits at step " + practice.frontier +
        " (→ or End to go back to it).";
      return;
    }
    hideUnanswered(now);
    byId("caption").textContent = practice.answered.join("\n");
    byId("rule").textContent = "";
    feedback.textContent = practice.feedback || "";
    if (practice.waiting) { form.hidden = true; return; }  // the step drawn whole, a moment
    var asked = question();
    byId("practice-prompt").textContent = asked.kind === "choice" ? asked.prompt :
      asked.prompt + " ?";
    var typing = asked.kind === "number";
    answerField.hidden = !typing;
    byId("check").hidden = !typing;
    choices.hidden = typing;
    if (!typing) { showChoices(asked); }
    (typing ? answerField : choices.querySelector("button")).focus({ preventScroll: true });
  }

  function showChoices(asked) {
    choices.textContent = "";
    asked.choices.forEach(function (text, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = (index + 1) + ". " + text;
      button.addEventListener("click", function () { check(index); });
      choices.appendChild(button);
    });
  }

  /* An answer as rows of numbers: 3, −4.0, [0; 2], [0, 0; 2, 4], [[0, 0], [2, 4]];
   * null if it is none of these. */
  function parseAnswer(text) {
    var t = text.replace(/[\u2212\u2013]/g, "-").trim();
    var rows;
    if (/^\[\s*\[/.test(t)) {
      if (!/\]\s*\]$/.test(t)) { return null; }
      rows = t.replace(/^\[\s*\[/, "").replace(/\]\s*\]$/, "").split(/\]\s*[,;]?\s*\[/);
    } else {
      rows = t.replace(/^\[/, "").replace(/\]$/, "").split(/[;\n]/);
    }
    var parsed = rows.map(function (row) {
      return row.split(/[\s,]+/).filter(Boolean).map(Number);
    });
    var bad = parsed.some(function (row) {
      return !row.length || row.some(function (n) { return !isFinite(n); });
    });
    return bad || !t ? null : parsed;
  }

  /* Whether a typed number is the drawn one: equal, equal once rounded to the digits
   * drawn (0.50 and 0.5; 0.333333 for 0.3333), or within three units of its last
   * digit, as a sum or product of the drawn numbers, rounded as drawn, comes out
   * (−0.2646 + 0.1487 = −0.1159, drawn −0.1158: a student who added the shares shown
   * was marked wrong). */
  function sameNumber(typed, drawnText) {
    var drawn = Number(drawnText.replace("\u2212", "-"));
    if (typed === drawn || Number(typed.toPrecision(data.precision)) === drawn) { return true; }
    if (!drawn) { return false; }
    var unit = Math.pow(10, Math.floor(Math.log10(Math.abs(drawn))) - data.precision + 1);
    return Math.abs(typed - drawn) <= 3 * unit * (1 + 1e-9);
  }

  function flat(rows) { return [].concat.apply([], rows); }

  /* "right", "shape" (not as many entries as drawn) or "wrong". A vector may be
   * typed as a row or a column; a matrix by its rows. */
  function compare(typed, expect) {
    var vector = expect.length === 1 || expect.every(function (row) { return row.length === 1; });
    var a = vector ? [flat(typed)] : typed, b = vector ? [flat(expect)] : expect;
    if (a.length !== b.length || a.some(function (row, r) { return row.length !== b[r].length; })) {
      return "shape";
    }
    return flat(a).every(function (n, i) { return sameNumber(n, flat(b)[i]); }) ? "right" : "wrong";
  }

  function entries(expect) {
    return expect.length + "×" + expect[0].length + (expect.length * expect[0].length > 1 ?
      " entries" : " entry");
  }

  function check(given) {
    if (!practising(current) || practice.waiting) { return; }
    var asked = question();
    var verdict;
    if (asked.kind === "choice") {
      verdict = given === asked.answer ? "right" : "wrong";
    } else {
      var typed = parseAnswer(answerField.value);
      if (typed === null) {
        feedback.textContent = "Type a number, or a matrix as [0, 0; 2, 4] or [[0, 0], [2, 4]].";
        return;
      }
      verdict = compare(typed, asked.expect);
      if (verdict === "shape") {
        feedback.textContent = "It has " + entries(asked.expect) + " (rows; columns).";
        return;
      }
    }
    if (verdict === "right") {
      answered(asked, practice.tries === 0 ? "right" : practice.tries === 1 ? "hinted" : "shown");
      return;
    }
    practice.tries++;
    practice.feedback = practice.tries === 1 ? "Not quite. Hint: " + asked.hint :
      "Not quite. Worked: " + asked.worked;
    if (answerField.value) { answerField.select(); }
    showPractice(current);
  }

  /* A question answered (or shown): its answer appears, then the next question; after
   * the step's last, the whole step is drawn and the next step comes. */
  function answered(asked, how) {
    practice.results.push({ rule: asked.rule, how: how });
    asked.reveals.forEach(function (id) { practice.revealed[id] = true; });
    practice.answered.push(asked.worked);
    practice.question++;
    practice.tries = 0;
    practice.feedback = (how === "shown" ? "Shown: " : "Right: ") + asked.worked;
    answerField.value = "";
    if (practice.question < data.practice[practice.frontier].length) {
      go(practice.frontier, "practice");
      return;
    }
    steps[practice.frontier].updated.concat(steps[practice.frontier].edges)
      .forEach(function (id) { practice.revealed[id] = true; });
    practice.waiting = true;
    go(practice.frontier, "practice");
    setTimeout(function () {
      practice.waiting = false;
      practice.revealed = {};
      practice.answered = [];
      practice.question = 0;
      practice.feedback = "";
      practice.frontier = nextAsking(practice.frontier);
      if (practice.frontier > last) { finish(); }
      go(practice.frontier, "practice");
    }, PRACTICE_PAUSE);
  }

  function finish() {
    practice.done = true;
    practice.frontier = last;
    var counts = { right: 0, hinted: 0, shown: 0 };
    var missed = [];
    practice.results.forEach(function (result) {
      counts[result.how]++;
      if (result.how !== "right" && missed.indexOf(result.rule) < 0) { missed.push(result.rule); }
    });
    var score = byId("practice-score");
    score.textContent = "Done: " + counts.right + " of " + practice.results.length +
      " right at the first try, " + counts.hinted + " after a hint, " + counts.shown +
      " shown." + (missed.length ? " Rules to review: " + missed.join("; ") + "." :
        " Every rule right.");
    feedback.textContent = "";
    score.setAttribute("tabindex", "-1");
    setTimeout(function () { score.focus({ preventScroll: true }); }, 0);
  }

  var PRACTICE_PAUSE = 600;  // ms the finished step stays drawn whole before the next
  if (practice) {
    root.classList.add("practising");
    practice.frontier = nextAsking(0);
    byId("practice-form").addEventListener("submit", function (event) {
      event.preventDefault();
      check(null);
    });
    byId("reveal").addEventListener("click", function () {
      if (practising(current) && !practice.waiting) { answered(question(), "shown"); }
    });
    if (practice.frontier > last) { finish(); }
  }

  go(practice && !/step=/.test(window.location.hash) ? practice.frontier : stepInAddress(),
    "address");
}());
