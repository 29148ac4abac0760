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

  function go(step) {
    var now = Math.max(0, Math.min(last, step));
    drawStep(now);
    showContributions(now);
    showCaption(now);
    showMemory(now);
    current = now;
    root.setAttribute("data-step", String(now));
    slider.value = String(now);
    counter.textContent = now + " / " + last;
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
      if (current >= last) { stop(); } else { go(current + 1); }
    }, 1500);
  }

  function toggle() { if (timer === null) { play(); } else { stop(); } }
  function jump(to) { stop(); go(to); }

  var actions = {
    first: function () { jump(0); },
    prev: function () { jump(current - 1); },
    play: toggle,
    next: function () { jump(current + 1); },
    last: function () { jump(last); }
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

  var start = /step=(\d+)/.exec(window.location.hash);
  go(start ? Number(start[1]) : 0);
}());
