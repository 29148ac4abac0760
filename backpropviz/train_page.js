/* backpropviz training page: pass k, step s of the run, from the data in #bpv-data.
 * A pass's steps are html.py's (0: the forward values and the seed, then one per
 * backward op), then one more: the update. Nothing is computed here. */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("bpv-data").textContent);
  var passes = data.passes;
  var root = document.getElementById("bpv");
  var stage = byId("stage");
  var iterSlider = byId("iteration");
  var slider = byId("slider");
  var playButton = byId("play");
  var now = { pass: -1, step: 0 };
  var versions = {};  // group id -> [[from step, class, inner SVG], ...] of the pass shown
  var shown = {};     // group id -> index of the version in the DOM
  var timer = null;

  function byId(id) { return document.getElementById(id); }

  /* The update is the step after the last backward step. */
  function updateStep(k) { return passes[k].steps.length; }

  /* Put pass k's picture on the stage, with its step-0 groups as versions 0. */
  function load(k) {
    stage.innerHTML = passes[k].svg;
    versions = {};
    shown = {};
    Object.keys(passes[k].frames).forEach(function (id) {
      var group = byId(id);
      versions[id] = [[0, group.getAttribute("class"), group.innerHTML]]
        .concat(passes[k].frames[id]);
      shown[id] = 0;
    });
    slider.max = String(updateStep(k));
  }

  /* The picture of backward step `step` (the update shows the last one's). */
  function drawStep(k, step) {
    var at = Math.min(step, passes[k].steps.length - 1);
    Object.keys(versions).forEach(function (id) {
      var list = versions[id];
      var index = 0;
      while (index + 1 < list.length && list[index + 1][0] <= at) { index++; }
      if (shown[id] === index) { return; }
      var group = byId(id);
      group.setAttribute("class", list[index][1]);
      group.innerHTML = list[index][2];
      shown[id] = index;
    });
    stage.querySelector("svg > g").setAttribute("class", passes[k].graphClasses[at]);
  }

  function svgElement(tag, attributes) {
    var element = document.createElementNS(SVG_NS, tag);
    Object.keys(attributes).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    return element;
  }

  /* Beside a parameter's box, what the update did to it: under the box or over it,
   * whichever covers the least of the other boxes and of the labels already placed
   * (a clash left is pushed down past the label it meets). */
  function addUpdateLabel(graph, node, line, placed) {
    var box = node.getBBox();
    var label = svgElement("g", { "class": "update-label", "data-node": node.id });
    var back = svgElement("rect", { rx: 3 });
    var text = svgElement("text", {
      x: box.x + 4, y: box.y + box.height + 18, "font-size": 13,
      "font-family": "Helvetica,Arial,sans-serif"
    });
    text.textContent = line;
    label.append(back, text);
    graph.appendChild(label);
    // (the other boxes and the key: a label laid over the key hid its words)
    var others = Array.prototype.filter.call(graph.querySelectorAll("g.node, g.legend"),
      function (other) { return other !== node; }).map(function (other) {
      return other.getBBox();
    }).concat(placed);
    function covered(size) {
      return others.reduce(function (sum, other) {
        var w = Math.min(size.x + size.width, other.x + other.width) - Math.max(size.x, other.x);
        var h = Math.min(size.y + size.height, other.y + other.height) -
          Math.max(size.y, other.y);
        return sum + (w > 0 && h > 0 ? w * h : 0);
      }, 0);
    }
    var below = text.getBBox();
    var lift = below.y - (box.y - 6 - below.height);
    var above = { x: below.x, y: below.y - lift, width: below.width, height: below.height };
    if (covered(above) < covered(below)) {
      text.setAttribute("y", (Number(text.getAttribute("y")) - lift).toFixed(2));
    }
    var size = text.getBBox();
    placed.forEach(function (other) {
      var overlaps = size.x < other.x + other.width && other.x < size.x + size.width &&
        size.y < other.y + other.height + 6 && other.y < size.y + size.height + 6;
      if (overlaps) {
        text.setAttribute("y", (Number(text.getAttribute("y")) +
          other.y + other.height + 8 - size.y).toFixed(2));
        size = text.getBBox();
      }
    });
    placed.push(size);
    back.setAttribute("x", (size.x - 4).toFixed(2));
    back.setAttribute("y", (size.y - 3).toFixed(2));
    back.setAttribute("width", (size.width + 8).toFixed(2));
    back.setAttribute("height", (size.height + 6).toFixed(2));
  }

  /* The parameters' marks: each one's update at the update step, and at a later pass's
   * step 0 the boxes it starts from. */
  function markParameters(k, step) {
    var update = step === updateStep(k);
    var graph = stage.querySelector("svg > g");
    graph.querySelectorAll(".update-label").forEach(function (old) { old.remove(); });
    var placed = [];
    passes[k].updates.forEach(function (entry) {
      var node = entry.node && byId(entry.node);
      if (!node) { return; }
      node.classList.toggle("updated", update);
      node.classList.toggle("started", step === 0 && k > 0);
      if (update) { addUpdateLabel(graph, node, entry.mark, placed); }
    });
    holdLabels(graph);
  }

  /* The picture's own viewBox, grown where the update's labels stand past it (a label
   * over a box at the picture's top edge was cut off there). */
  function holdLabels(graph) {
    var svg = graph.ownerSVGElement;
    if (!svg.dataset.drawn) {
      var own = svg.viewBox.baseVal;
      svg.dataset.drawn = [own.x, own.y, own.width, own.height].join(" ");
    }
    var drawn = svg.dataset.drawn.split(" ").map(Number);
    var x0 = drawn[0], y0 = drawn[1], x1 = x0 + drawn[2], y1 = y0 + drawn[3];
    var placed = graph.transform.baseVal.consolidate();  // (graphviz's scale and shift)
    var t = placed ? placed.matrix : svg.createSVGMatrix();
    graph.querySelectorAll(".update-label rect").forEach(function (back) {
      var b = back.getBBox();
      x0 = Math.min(x0, b.x * t.a + t.e - 2);
      y0 = Math.min(y0, b.y * t.d + t.f - 2);
      x1 = Math.max(x1, (b.x + b.width) * t.a + t.e + 2);
      y1 = Math.max(y1, (b.y + b.height) * t.d + t.f + 2);
    });
    svg.setAttribute("viewBox", [x0, y0, x1 - x0, y1 - y0].map(function (n) {
      return n.toFixed(2);
    }).join(" "));
  }

  /* What the caption says at pass k, step `step`: its label, worked lines and rule. */
  function captionAt(k, step) {
    var pass = passes[k];
    var where = "Pass " + pass.index;
    if (step === updateStep(k)) {
      return {
        label: where + ", the update: the script changes each parameter",
        caption: pass.updates.map(function (entry) { return entry.line; }).join("\n"),
        rule: k + 1 < passes.length ? "The next forward pass reads these values." :
          "The last kept pass: these are the values the script ends with."
      };
    }
    var state = pass.steps[step];
    return {
      label: where + ", step " + step + " of " + updateStep(k) + ": " + (step === 0 ?
        "the forward values and the seed" :
        window.bpvCaptionRoom.opTitle(pass.ops[state.op])),
      caption: state.caption,
      rule: step === 0 && pass.start ? pass.start : state.rule
    };
  }

  function showCaption(k, step) {
    var said = captionAt(k, step);
    byId("step-label").textContent = said.label;
    byId("caption").textContent = said.caption;
    byId("rule").textContent = said.rule;
  }

  /* The caption's room held at the tallest of every pass's every step (caption_room.js). */
  var moments = [];
  passes.forEach(function (pass, k) {
    for (var step = 0; step <= updateStep(k); step++) { moments.push([k, step]); }
  });
  var holdCaptionRoom = window.bpvCaptionRoom(byId("caption-box"), moments.length,
    function (i, across) {
      var said = captionAt(moments[i][0], moments[i][1]);
      return window.bpvCaptionRoom.lines(said.caption, across) +
        window.bpvCaptionRoom.lines(said.rule, across);
    },
    function (i, label, caption, rule) {
      var said = captionAt(moments[i][0], moments[i][1]);
      label.textContent = said.label;
      caption.textContent = said.caption;
      rule.textContent = said.rule;
    });

  function showLoss(k) {
    root.querySelectorAll("#loss-curve .loss-point.now").forEach(function (point) {
      point.classList.remove("now");
    });
    var point = byId("loss-point-" + passes[k].index);
    if (point) { point.classList.add("now"); }
    byId("pass-loss").textContent = "pass " + passes[k].index + ": loss " + passes[k].loss;
  }

  /* Pass k, step `step`; the address follows (#iter=K&step=S, a new history entry),
   * unless the moment came from the address or from playing. */
  function go(k, step, how) {
    k = Math.max(0, Math.min(passes.length - 1, k));
    if (k !== now.pass) { load(k); showLoss(k); }
    step = Math.max(0, Math.min(updateStep(k), step));
    drawStep(k, step);
    markParameters(k, step);
    showCaption(k, step);
    holdCaptionRoom();
    now = { pass: k, step: step };
    root.setAttribute("data-iter", String(k));
    root.setAttribute("data-step", String(step));
    iterSlider.value = String(k);
    slider.value = String(step);
    byId("iter-counter").textContent = "pass " + passes[k].index + " (" + (k + 1) + " / " +
      passes.length + ")";
    byId("counter").textContent = step + " / " + updateStep(k);
    var hash = "#iter=" + k + "&step=" + step;
    if (how !== "address" && window.location.hash !== hash) {
      if (how === "play") { history.replaceState(null, "", hash); }
      else { history.pushState(null, "", hash); }
    }
  }

  /* Stepping runs on through the passes: after an update comes the next forward pass. */
  function forward(how) {
    if (now.step < updateStep(now.pass)) { go(now.pass, now.step + 1, how); }
    else if (now.pass + 1 < passes.length) { go(now.pass + 1, 0, how); }
  }
  function backward() {
    if (now.step > 0) { go(now.pass, now.step - 1); }
    else if (now.pass > 0) { go(now.pass - 1, updateStep(now.pass - 1)); }
  }
  function atEnd() {
    return now.pass === passes.length - 1 && now.step === updateStep(now.pass);
  }

  function moment() {
    var pass = /iter=(\d+)/.exec(window.location.hash);
    var step = /step=(\d+)/.exec(window.location.hash);
    return [pass ? Number(pass[1]) : 0, step ? Number(step[1]) : 0];
  }
  function fromAddress() {
    var at = moment();
    if (at[0] !== now.pass || at[1] !== now.step) { stop(); go(at[0], at[1], "address"); }
  }
  window.addEventListener("popstate", fromAddress);
  window.addEventListener("hashchange", fromAddress);

  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    playButton.textContent = "▶ play";
  }
  function play() {
    if (atEnd()) { go(0, 0); }
    playButton.textContent = "❚❚ pause";
    timer = setInterval(function () { if (atEnd()) { stop(); } else { forward("play"); } }, 1200);
  }
  function toggle() { if (timer === null) { play(); } else { stop(); } }

  /* A pass away keeps the step, so that one moment can be compared across passes. */
  var actions = {
    "prev-iter": function () { stop(); go(now.pass - 1, now.step); },
    "next-iter": function () { stop(); go(now.pass + 1, now.step); },
    prev: function () { stop(); backward(); },
    next: function () { stop(); forward(); },
    play: toggle
  };
  Object.keys(actions).forEach(function (id) {
    byId(id).addEventListener("click", function (event) {
      actions[id]();
      if (event.detail > 0) { event.currentTarget.blur(); }
    });
  });
  iterSlider.addEventListener("input", function () { stop(); go(Number(iterSlider.value), now.step); });
  slider.addEventListener("input", function () { stop(); go(now.pass, Number(slider.value)); });
  byId("loss-curve").addEventListener("click", function (event) {
    var point = event.target.closest(".loss-point");
    var k = point ? passes.findIndex(function (pass) {
      return String(pass.index) === point.getAttribute("data-iteration");
    }) : -1;
    if (k >= 0) { stop(); go(k, now.step); }
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = event.target;
    if ((target === slider || target === iterSlider) && /^(Arrow|Home|End|Page)/.test(event.key)) {
      return;
    }
    if (target.tagName === "BUTTON" && (event.key === " " || event.key === "Enter")) { return; }
    var handled = true;
    switch (event.key) {
      case "ArrowRight": actions.next(); break;
      case "ArrowLeft": actions.prev(); break;
      case "PageDown": case "]": actions["next-iter"](); break;
      case "PageUp": case "[": actions["prev-iter"](); break;
      case "Home": stop(); go(now.pass, 0); break;
      case "End": stop(); go(now.pass, updateStep(now.pass)); break;
      case " ": case "Spacebar": toggle(); break;
      default: handled = false;
    }
    if (handled) { event.preventDefault(); }
  });

  var start = moment();
  go(start[0], start[1], "address");
}());
