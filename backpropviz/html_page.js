/* backpropviz step-through page: replays the backward pass recorded in #bpv-data.
 * The SVG is draw's picture of step 0; data.frames holds, for every node and edge
 * whose drawing changes, its drawing from the step it changes on. Step k shows
 * draw's picture of step k. Nothing is computed here: it is all in the data. */
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("bpv-data").textContent);
  var root = document.getElementById("bpv");
  var svg = root.querySelector("#stage svg");
  var graph = svg.querySelector("g");
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
  Object.keys(data.frames).forEach(function (id) {
    var group = byId(id);
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
    refit: function (box) { fitted = box; fit(); }
  };

  function byId(id) { return document.getElementById(id); }

  /* Put every changing group into the version drawn for step `now`. */
  function drawStep(now) {
    Object.keys(data.frames).forEach(function (id) {
      var versions = data.frames[id];
      var index = 0;
      while (index + 1 < versions.length && versions[index + 1][0] <= now) { index++; }
      if (shown[id] === index) { return; }
      var group = byId(id);
      group.setAttribute("class", versions[index][1]);
      group.innerHTML = versions[index][2];
      shown[id] = index;
    });
    graph.setAttribute("class", data.graphClasses[now]);
  }

  function svgElement(tag, attributes) {
    var element = document.createElementNS(SVG_NS, tag);
    Object.keys(attributes).forEach(function (key) {
      element.setAttribute(key, attributes[key]);
    });
    return element;
  }

  /* A contribution on an edge of the current op that draw leaves unlabelled
   * (draw labels a fork's edges only): a small table at the middle of the edge. */
  function addLabel(group, entry) {
    var path = group.querySelector("path");
    if (!path) { return; }
    var middle = path.getPointAtLength(path.getTotalLength() / 2);
    var label = svgElement("g", { "class": "overlay-label" });
    var box = svgElement("rect", { rx: 3 });
    label.appendChild(box);
    group.appendChild(label);
    var widths = [];
    var placed = [];
    entry.cells.forEach(function (row, r) {
      row.forEach(function (cell, c) {
        var dead = entry.dead && entry.dead[r][c];
        var text = svgElement("text", {
          "text-anchor": "end", "font-family": "Helvetica,Arial,sans-serif",
          "font-size": data.theme.labelPt, "fill": dead ? data.theme.deadText : data.theme.grad
        });
        text.textContent = cell;
        label.appendChild(text);
        widths[c] = Math.max(widths[c] || 0, text.getComputedTextLength());
        placed.push({ text: text, row: r, column: c });
      });
    });
    var pad = 3, gap = 6, line = data.theme.labelPt + 2;
    var width = widths.reduce(function (a, b) { return a + b; }, 0) +
      gap * (widths.length - 1) + 2 * pad;
    var height = entry.cells.length * line + 2 * pad;
    var left = middle.x - width / 2, top = middle.y - height / 2;
    placed.forEach(function (item) {
      var right = left + pad;
      for (var c = 0; c <= item.column; c++) { right += widths[c] + (c ? gap : 0); }
      item.text.setAttribute("x", right.toFixed(2));
      item.text.setAttribute("y", (top + pad + (item.row + 1) * line - 3).toFixed(2));
    });
    box.setAttribute("x", left.toFixed(2));
    box.setAttribute("y", top.toFixed(2));
    box.setAttribute("width", width.toFixed(2));
    box.setAttribute("height", height.toFixed(2));
  }

  function showContributions(now) {
    svg.querySelectorAll(".overlay-label").forEach(function (label) { label.remove(); });
    steps[now].edges.forEach(function (id) {
      var group = byId(id);
      var entry = data.contributions[id];
      var labelled = group.classList.contains("contribution") ||
        group.classList.contains("pending-contribution");
      if (entry && !labelled) { addLabel(group, entry); }
    });
  }

  function showCaption(now) {
    var step = steps[now];
    var label;
    if (now === 0) {
      label = "Step 0 of " + last + ": the forward values" +
        (Object.keys(step.grads).length ? " and the seed" : "");
    } else {
      var op = data.ops[step.op];
      label = "Step " + now + " of " + last + ": " + op.symbol + " (" + op.op + ")";
    }
    byId("step-label").textContent = label;
    byId("caption").textContent = step.caption;
    byId("rule").textContent = step.rule;
  }

  /* The bytes kept for backward after this step, and the values kept, marked in the graph. */
  function showMemory(now) {
    var memory = data.memory;
    if (!memory.bytes.length) { return; }
    byId("memory-text").textContent = memory.text[now];
    byId("memory-fill").style.width = memory.fill[now] + "%";
    svg.querySelectorAll("g.node.held, g.node.freed").forEach(function (node) {
      node.classList.remove("held", "freed");
    });
    function mark(className) {
      return function (id) { var node = byId(id); if (node) { node.classList.add(className); } };
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
   * (how = "address") or from playing (one entry for the whole play). */
  function go(step, how) {
    var now = Math.max(0, Math.min(last, step));
    bpv.draw(now);
    showContributions(now);
    showCaption(now);
    showMemory(now);
    current = now;
    root.setAttribute("data-step", String(now));
    slider.value = String(now);
    counter.textContent = now + " / " + last;
    var hash = "#step=" + now + bpv.hash();
    if (how !== "address" && window.location.hash !== hash) {
      if (how === "play") { history.replaceState(null, "", hash); }
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

  /* The view: the drawing fitted to the stage (its own viewBox; the browser re-fits
   * it as the window changes), zoomed and panned by moving that viewBox. */
  var stage = byId("stage");
  var box = svg.viewBox.baseVal;
  var fitted = { x: box.x, y: box.y, w: box.width, h: box.height };
  var view = { x: fitted.x, y: fitted.y, w: fitted.w, h: fitted.h };
  function setView(next) {
    view = next;
    svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].map(function (n) {
      return n.toFixed(2);
    }).join(" "));
    root.classList.toggle("zoomed", Math.abs(view.w - fitted.w) > 1e-6 * fitted.w ||
      Math.abs(view.x - fitted.x) > 1e-3 || Math.abs(view.y - fitted.y) > 1e-3);
  }
  function fit() { setView({ x: fitted.x, y: fitted.y, w: fitted.w, h: fitted.h }); }
  function pointAt(clientX, clientY) {
    var point = svg.createSVGPoint();
    point.x = clientX; point.y = clientY;
    return point.matrixTransform(svg.getScreenCTM().inverse());
  }
  /* Zoom by `factor` (> 1: in) keeping the point under (clientX, clientY) in place. */
  function zoomAt(clientX, clientY, factor) {
    var p = pointAt(clientX, clientY);
    var w = Math.max(fitted.w / 40, Math.min(fitted.w * 2, view.w / factor));
    var k = view.w / w;
    setView({ x: p.x - (p.x - view.x) / k, y: p.y - (p.y - view.y) / k, w: w, h: view.h / k });
  }
  function panBy(dxScreen, dyScreen) {
    var scale = svg.getScreenCTM().a;
    setView({ x: view.x - dxScreen / scale, y: view.y - dyScreen / scale, w: view.w, h: view.h });
  }
  function zoomCentre(factor) {
    var rect = svg.getBoundingClientRect();
    zoomAt(rect.left + rect.width / 2, rect.top + rect.height / 2, factor);
  }
  stage.addEventListener("wheel", function (event) {
    event.preventDefault();
    // A trackpad's pinch arrives as a wheel with ctrlKey, in finer steps.
    var speed = event.ctrlKey ? 0.01 : 0.0015;
    zoomAt(event.clientX, event.clientY, Math.exp(-event.deltaY * speed));
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
  stage.addEventListener("dblclick", fit);

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
    fit: fit,
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
      case "0": fit(); break;
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
      var grad = steps[current].grads[id];
      var content;
      if (grad) {
        content = table(grad, "grad");
      } else {
        content = document.createElement("div");
        content.className = "none";
        content.textContent = "not computed yet";
      }
      arrays.appendChild(column("gradient", content));
      tooltip.append(name, meta, arrays);
    } else if (op) {
      name.textContent = op.symbol;
      meta.textContent = op.op + " → " + data.values[op.result].name;
      tooltip.append(name, meta);
    }
  }

  function place(event) {
    var x = event.clientX + 16, y = event.clientY + 16;
    var width = tooltip.offsetWidth, height = tooltip.offsetHeight;
    if (x + width > window.innerWidth - 4) { x = Math.max(4, event.clientX - width - 16); }
    if (y + height > window.innerHeight - 4) { y = Math.max(4, event.clientY - height - 16); }
    tooltip.style.left = x + "px";
    tooltip.style.top = y + "px";
  }

  svg.addEventListener("mouseover", function (event) {
    var node = event.target.closest("g.node");
    if (!node) { tooltip.hidden = true; return; }
    describe(node.id);
    tooltip.hidden = false;
    place(event);
  });
  svg.addEventListener("mousemove", function (event) {
    if (!tooltip.hidden) { place(event); }
  });
  svg.addEventListener("mouseleave", function () { tooltip.hidden = true; });

  go(stepInAddress(), "address");
}());
