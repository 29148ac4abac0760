/* backpropviz step-through page: groups that open in place (data.groups, page_groups.py).
 * Clicking (or Enter on) a group's operator draws its inside where the operator stood:
 * what lies beyond the operator moves aside by one shift a side, the rest stays put,
 * and the steps walk the group's own ops in place of its one step. Clicking its frame
 * (or Enter on it) closes it. The open groups are in the address: #step=N&open=a,b.
 * The inside's drawings, steps and numbers are all in the data, as the page's are:
 * here they are only placed, and the links from the values outside to their copies
 * inside drawn. */
(function () {
  "use strict";
  var bpv = window.bpv;
  var data = bpv.data, svg = bpv.svg, graph = bpv.graph;
  var groups = data.groups || {};
  if (!Object.keys(groups).length) { return; }
  var SVG_NS = "http://www.w3.org/2000/svg";
  var PAD = 10, LABEL = 18, GAP = 14;
  var drawOuter = bpv.draw;
  var outerSteps = data.steps;
  var memory = {};
  ["text", "fill", "held", "freed", "spark"].forEach(function (key) {
    if (Array.isArray(data.memory[key])) { memory[key] = data.memory[key]; }
  });
  var box = svg.viewBox.baseVal;
  var fitted = { x: box.x, y: box.y, w: box.width, h: box.height };
  var origin = {};  // node id -> its box as laid out, in the graph's coordinates
  var rowOf = {};  // node id -> its row, in a drawing folded into rows (html.py's data-row)
  graph.querySelectorAll(":scope > g.node").forEach(function (node) {
    origin[node.id] = node.getBBox();
    if (node.hasAttribute("data-row")) { rowOf[node.id] = Number(node.getAttribute("data-row")); }
  });
  // The legend, a row under the drawing, and the lowest edge of what it stands under.
  var legend = byId("legend");
  var bottom = Object.keys(origin).reduce(function (low, id) {
    return Math.max(low, origin[id].y + origin[id].height);
  }, -Infinity);
  var open = [];  // the open groups' ids, in the order they were opened
  var placed = {};  // group id -> its drawing and where it stands
  var entries = outerSteps.map(function (_, k) { return { outer: k }; });
  var edgeHtml = {};  // outer edge id -> its drawing before it was moved aside

  function byId(id) { return document.getElementById(id); }
  function prefixed(gid, id) { return id === null ? null : gid + "/" + id; }
  function renamed(gid, object) {
    var out = {};
    Object.keys(object).forEach(function (id) { out[prefixed(gid, id)] = object[id]; });
    return out;
  }

  /* The inside's values, ops and contributions join the page's, under ids of their own. */
  Object.keys(groups).forEach(function (gid) {
    var group = groups[gid];
    Object.assign(data.values, renamed(gid, group.values));
    Object.keys(group.ops).forEach(function (id) {
      var op = group.ops[id];
      data.ops[prefixed(gid, id)] = {
        op: op.op, symbol: op.symbol, result: prefixed(gid, op.result),
        operands: op.operands.map(function (edge) { return prefixed(gid, edge); })
      };
    });
    Object.assign(data.contributions, renamed(gid, group.contributions));
    group.inner = group.steps.map(function (state) {
      var mapped = function (id) { return prefixed(gid, id); };
      return {
        op: mapped(state.op), result: mapped(state.result), edges: state.edges.map(mapped),
        updated: state.updated.map(mapped), accumulated: state.accumulated.map(mapped),
        grads: renamed(gid, state.grads), caption: state.caption, rule: state.rule
      };
    });
    var operator = byId(gid);
    operator.classList.add("closed-group");
    operator.setAttribute("tabindex", "0");
    operator.setAttribute("role", "button");
    operator.setAttribute("aria-label", "open the group " + group.name);
  });

  /* ---------------------------------------------------------------- the steps */

  /* Which inner step an open group shows at an entry of the steps walked. */
  function innerStep(gid, entry) {
    var group = groups[gid];
    if (entry.group === gid) { return entry.inner; }
    return entry.outer < group.step ? 0 : group.inner.length - 1;
  }

  /* The steps walked: the page's, each open group's one step replaced by its own ops'. */
  function walked() {
    var list = [];
    outerSteps.forEach(function (_, k) {
      var gid = open.filter(function (id) { return groups[id].step === k; })[0];
      if (gid === undefined) { list.push({ outer: k }); return; }
      var count = groups[gid].inner.length - 1;
      for (var j = 1; j <= count; j++) {
        list.push({ outer: j < count ? k - 1 : k, group: gid, inner: j });
      }
    });
    return list;
  }

  function stateOf(entry) {
    var outer = outerSteps[entry.outer];
    var state = entry.group ? Object.assign({}, groups[entry.group].inner[entry.inner]) :
      Object.assign({}, outer);
    state.grads = Object.assign({}, outer.grads);
    open.forEach(function (gid) {
      Object.assign(state.grads, groups[gid].inner[innerStep(gid, entry)].grads);
    });
    return state;
  }

  function setSteps() {
    entries = walked();
    bpv.setSteps(entries.map(stateOf));
    Object.keys(memory).forEach(function (key) {
      data.memory[key] = entries.map(function (entry) { return memory[key][entry.outer]; });
    });
  }

  /* ---------------------------------------------------------------- the drawing */

  function svgElement(tag, attributes) {
    var element = document.createElementNS(SVG_NS, tag);
    Object.keys(attributes).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    return element;
  }

  function centre(b) { return { x: b.x + b.width / 2, y: b.y + b.height / 2 }; }

  /* A group's inside drawn in a frame, its ids its own, not yet placed. */
  function drawing(gid) {
    var group = groups[gid];
    // (as HTML: the page's SVG is written without its namespace, as HTML reads it)
    var parsed = new DOMParser().parseFromString(group.drawing[0], "text/html");
    var inner = document.importNode(parsed.querySelector("svg > g"), true);
    Array.prototype.slice.call(inner.children).forEach(function (child) {
      if (child.tagName !== "g" || child.id === "legend") { inner.removeChild(child); }
    });
    inner.querySelectorAll("[id]").forEach(function (element) {
      element.id = prefixed(gid, element.id);
    });
    var frames = {}, shown = {};
    Object.keys(group.drawing[1]).forEach(function (id) {
      var element = inner.querySelector('[id="' + prefixed(gid, id) + '"]');
      if (!element) { return; }
      frames[id] = [[0, element.getAttribute("class"), element.innerHTML]]
        .concat(group.drawing[1][id]);
      shown[id] = 0;
    });
    var wrapper = svgElement("g", { "class": "opened-group", "data-group": gid });
    var frame = svgElement("g", {
      "class": "group-frame", tabindex: "0", role: "button",
      "aria-label": "close the group " + group.name
    });
    var rect = svgElement("rect", { rx: 6 });
    var title = svgElement("text", { "class": "group-name" });
    title.textContent = group.name;
    frame.append(rect, title);
    var content = svgElement("g", {});
    content.appendChild(inner);
    wrapper.append(frame, content);
    return { wrapper: wrapper, rect: rect, title: title, content: content, inner: inner,
      frames: frames, shown: shown };
  }

  /* Where group `gid` stands (its operator's box as laid out) and how it moves
   * what lies beyond it: along the way from its operator to its result, all that
   * is past the operator by the frame's growth; beside it, what is on either side
   * by half the growth across. In a drawing folded into rows, the way is along its
   * rows, and the other rows move across, out of the frame's way, and no further. */
  function place(gid, view) {
    var operator = origin[gid];
    var result = origin[data.ops[gid].result];
    var o = centre(operator), r = centre(result);
    var row = rowOf[gid];
    var inRow = row === undefined || rowOf[data.ops[gid].result] === row;
    var along = Math.abs(r.x - o.x) >= Math.abs(r.y - o.y) ? "x" : "y";
    if (!inRow) {  // (its result begins the next row: the way is its row's)
      var same = Object.keys(rowOf).filter(function (id) { return rowOf[id] === row; });
      var extent = function (axis) {
        var at = same.map(function (id) { return centre(origin[id])[axis]; });
        return Math.max.apply(null, at) - Math.min.apply(null, at);
      };
      along = extent("x") >= extent("y") ? "x" : "y";
    }
    var across = along === "x" ? "y" : "x";
    var sign = !inRow || (along === "x" ? r.x - o.x : r.y - o.y) >= 0 ? 1 : -1;
    var size = { x: "width", y: "height" };
    view.content.removeAttribute("transform");
    var inner = view.content.getBBox();
    var frame = { width: inner.width + 2 * PAD, height: inner.height + 2 * PAD + LABEL };
    var grow = Math.max(0, frame[size[along]] + GAP - operator[size[along]]);
    var spread = Math.max(0, frame[size[across]] - operator[size[across]]) / 2;
    var corner = {};
    corner[along] = sign > 0 ? operator[along] : operator[along] + operator[size[along]] -
      frame[size[along]];
    corner[across] = o[across] - frame[size[across]] / 2;
    view.frameBox = { x: corner.x, y: corner.y, width: frame.width, height: frame.height };
    view.innerBox = inner;
    view.shift = function (id) {
      var moved = { x: 0, y: 0 };
      var point = centre(origin[id]);
      if (row !== undefined && rowOf[id] !== undefined && rowOf[id] !== row) {
        moved[across] = rowOf[id] > row ? spread : -spread;
        return moved;
      }
      var beyond = (point[along] - o[along]) * sign;
      if (beyond > operator[size[along]] / 2) { moved[along] = sign * grow; }
      else if (beyond >= -operator[size[along]] / 2) {
        moved[across] = point[across] < o[across] ? -spread : spread;
      }
      return moved;
    };
  }

  /* How far the open groups other than `except` move node `id`. */
  function shifted(id, except) {
    var total = { x: 0, y: 0 };
    open.forEach(function (gid) {
      if (gid === except) { return; }
      var moved = placed[gid].shift(id);
      total.x += moved.x; total.y += moved.y;
    });
    return total;
  }

  function translate(element, moved) {
    if (moved.x || moved.y) {
      element.setAttribute("transform", "translate(" + moved.x.toFixed(2) + " " +
        moved.y.toFixed(2) + ")");
    } else { element.removeAttribute("transform"); }
  }

  function ends(id) {
    var parts = /^(.*)->(.*)#[^#]*$/.exec(id);
    return parts ? [parts[1], parts[2]] : [null, null];
  }

  /* The nodes the drawing of edge `id` (its ends `pair`) runs between: a contribution's
   * badge ends the piece into it ("/in") and starts the piece out of it ("/out"). */
  function drawnEnds(id, pair) {
    var piece = /^(.*)\/(in|out)$/.exec(id);
    if (!piece || !origin[piece[1]]) { return pair; }
    return piece[2] === "in" ? [pair[0], piece[1]] : [piece[1], pair[1]];
  }

  /* An edge's drawing moved as its ends moved (`from`, `to`): each point of its
   * path by the shift between theirs, as far along the path as it is, its
   * arrowhead with its head, its labels by the shift halfway. */
  function moveEdge(edge, from, to) {
    function between(t) { return { x: from.x + (to.x - from.x) * t, y: from.y + (to.y - from.y) * t }; }
    function fixed(n) { return n.toFixed(2); }
    var end = null;
    edge.querySelectorAll("path").forEach(function (path) {
      var numbers = (path.getAttribute("d").match(/-?[\d.]+(e-?\d+)?/g) || []).map(Number);
      var count = Math.floor(numbers.length / 2);
      end = end || { x: numbers[2 * count - 2], y: numbers[2 * count - 1] };
      var pairs = [];
      for (var i = 0; i < count; i++) {
        var moved = between(count > 1 ? i / (count - 1) : 0);
        pairs.push(fixed(numbers[2 * i] + moved.x) + "," + fixed(numbers[2 * i + 1] + moved.y));
      }
      // (graphviz draws an edge as M x,y C x,y x,y x,y ...)
      path.setAttribute("d", "M" + pairs[0] + (count > 1 ? "C" + pairs.slice(1).join(" ") : ""));
    });
    edge.querySelectorAll("polygon, polyline").forEach(function (shape) {
      var xy = shape.getAttribute("points").trim().split(/\s+/).map(function (pair) {
        return pair.split(",").map(Number);
      });
      var arrowhead = end && Math.hypot(xy[0][0] - end.x, xy[0][1] - end.y) < 16;
      var moved = arrowhead ? to : between(0.5);
      shape.setAttribute("points", xy.map(function (p) {
        return fixed(p[0] + moved.x) + "," + fixed(p[1] + moved.y);
      }).join(" "));
    });
    edge.querySelectorAll("text, rect, image").forEach(function (element) {
      var moved = between(0.5);
      element.setAttribute("x", fixed(Number(element.getAttribute("x")) + moved.x));
      element.setAttribute("y", fixed(Number(element.getAttribute("y")) + moved.y));
    });
  }

  /* A box in the graph's coordinates, as drawn now (transforms and all). */
  function drawnBox(element) {
    var b = element.getBBox();
    var m = graph.getCTM().inverse().multiply(element.getCTM());
    var a = svg.createSVGPoint(), c = svg.createSVGPoint();
    a.x = b.x; a.y = b.y; c.x = b.x + b.width; c.y = b.y + b.height;
    a = a.matrixTransform(m); c = c.matrixTransform(m);
    return { x: Math.min(a.x, c.x), y: Math.min(a.y, c.y), width: Math.abs(c.x - a.x),
      height: Math.abs(c.y - a.y) };
  }

  /* Where the segment from the centre of box `b` towards `to` leaves `b`. */
  function rim(b, to) {
    var c = centre(b);
    var dx = to.x - c.x, dy = to.y - c.y;
    var t = Math.min(dx ? b.width / 2 / Math.abs(dx) : Infinity,
      dy ? b.height / 2 / Math.abs(dy) : Infinity, 1);
    return { x: c.x + dx * t, y: c.y + dy * t };
  }

  /* The links from each value outside an open group to its copy inside. */
  function links() {
    var layer = graph.querySelector(":scope > g.group-links");
    if (!layer) {
      layer = svgElement("g", { "class": "group-links" });
      graph.insertBefore(layer, graph.querySelector(":scope > g.node, :scope > g.edge"));
    }
    layer.textContent = "";
    open.forEach(function (gid) {
      var operands = data.ops[gid].operands.map(function (id) { return ends(id)[0]; });
      operands.concat([data.ops[gid].result]).forEach(function (value, index) {
        var outside = byId(value), inside = byId(prefixed(gid, value));
        if (!outside || !inside) { return; }
        var a = drawnBox(outside), b = drawnBox(inside);
        var from = rim(a, centre(b)), to = rim(b, centre(a));
        if (index === operands.length) { var swap = from; from = to; to = swap; }
        layer.appendChild(svgElement("path", {
          d: "M" + from.x.toFixed(2) + "," + from.y.toFixed(2) + "L" + to.x.toFixed(2) +
            "," + to.y.toFixed(2)
        }));
      });
    });
  }

  /* Everything where the open groups put it: the rest of the drawing moved aside,
   * each open group in its frame where its operator stood, the links between. */
  function layout() {
    Object.keys(origin).forEach(function (id) {
      var node = byId(id);
      // (an open group's operator is hidden, and so is a contribution's badge on an edge
      // into or out of it: the group's link stands in for that edge)
      var pair = ends(id);
      if (open.indexOf(id) >= 0 || open.indexOf(pair[0]) >= 0 || open.indexOf(pair[1]) >= 0) {
        node.classList.add("opened"); return;
      }
      node.classList.remove("opened");
      translate(node, shifted(id));
    });
    graph.querySelectorAll(":scope > g.edge").forEach(function (edge) {
      var pair = ends(edge.id);
      var hidden = open.indexOf(pair[0]) >= 0 || open.indexOf(pair[1]) >= 0;
      edge.classList.toggle("opened", hidden);
      if (edgeHtml[edge.id] === undefined) { edgeHtml[edge.id] = edge.innerHTML; }
      edge.innerHTML = edgeHtml[edge.id];
      if (open.length && !hidden) {
        var runs = drawnEnds(edge.id, pair);
        var from = shifted(runs[0]), to = shifted(runs[1]);
        if (from.x === to.x && from.y === to.y) { translate(edge, from); }
        else { edge.removeAttribute("transform"); moveEdge(edge, from, to); }
      } else { edge.removeAttribute("transform"); }
    });
    open.forEach(function (gid) {
      var view = placed[gid];
      var moved = shifted(gid, gid);
      var f = view.frameBox, inner = view.innerBox;
      translate(view.content, {
        x: f.x + PAD - inner.x + moved.x, y: f.y + PAD + LABEL - inner.y + moved.y
      });
      view.rect.setAttribute("x", (f.x + moved.x).toFixed(2));
      view.rect.setAttribute("y", (f.y + moved.y).toFixed(2));
      view.rect.setAttribute("width", f.width.toFixed(2));
      view.rect.setAttribute("height", f.height.toFixed(2));
      view.title.setAttribute("x", (f.x + moved.x + PAD).toFixed(2));
      view.title.setAttribute("y", (f.y + moved.y + LABEL - 3).toFixed(2));
    });
    links();
    keepLegendUnder();
  }

  /* The legend moved down as far as the drawing's lowest edge went down as groups
   * opened (the operators beside an open group move aside, some below it), so that
   * nothing comes to stand on it. */
  function keepLegendUnder() {
    if (!legend) { return; }
    var low = -Infinity;
    Object.keys(origin).forEach(function (id) {
      if (byId(id).classList.contains("opened")) { return; }  // (hidden: see layout)
      low = Math.max(low, origin[id].y + origin[id].height + shifted(id).y);
    });
    open.forEach(function (gid) {
      var f = placed[gid].frameBox;
      low = Math.max(low, f.y + f.height + shifted(gid, gid).y);
    });
    translate(legend, { x: 0, y: Math.max(0, low - bottom) });
  }

  /* The page's drawing of a step, then the open groups' insides at theirs; edges are
   * put back as drawn first, so that the page swaps in only drawings of its own. */
  function restoreEdges() {
    Object.keys(edgeHtml).forEach(function (id) { byId(id).innerHTML = edgeHtml[id]; });
    edgeHtml = {};
  }

  bpv.draw = function (now) {
    var entry = entries[now];
    restoreEdges();
    drawOuter(entry.outer);
    // Inside a group, the drawing around it is at the step before, its op no longer current.
    graph.classList.toggle("inside-step", Boolean(entry.group) &&
      entry.outer < groups[entry.group].step);
    open.forEach(function (gid) {
      var view = placed[gid];
      var step = innerStep(gid, entry);
      Object.keys(view.frames).forEach(function (id) {
        var versions = view.frames[id];
        var index = 0;
        while (index + 1 < versions.length && versions[index + 1][0] <= step) { index++; }
        if (view.shown[id] === index) { return; }
        var element = byId(prefixed(gid, id));
        element.setAttribute("class", versions[index][1]);
        element.innerHTML = versions[index][2];
        view.shown[id] = index;
      });
      view.inner.setAttribute("class", groups[gid].drawing[2][step]);
      // Its first picture holds the gradients known when its step begins: not before.
      var early = entry.outer < groups[gid].step - 1;
      view.inner.querySelectorAll("text").forEach(function (text) {
        text.classList.toggle("not-yet", early && text.getAttribute("fill") === data.theme.grad);
      });
    });
    layout();
  };
  bpv.hash = function () { return open.length ? "&open=" + open.join(",") : ""; };

  /* The view fitted to the drawing with its open groups (as laid out when none is). */
  function refit() {
    if (!open.length) { bpv.refit(fitted); return; }
    var b = graph.getBBox();
    var m = graph.transform.baseVal.consolidate();
    var t = m ? m.matrix : svg.createSVGMatrix();
    var x0 = Math.min(fitted.x, b.x * t.a + t.e), y0 = Math.min(fitted.y, b.y * t.d + t.f);
    var x1 = Math.max(fitted.x + fitted.w, (b.x + b.width) * t.a + t.e);
    var y1 = Math.max(fitted.y + fitted.h, (b.y + b.height) * t.d + t.f);
    bpv.refit({ x: x0, y: y0, w: x1 - x0, h: y1 - y0 });
  }

  function setOpen(ids) {
    open.slice().forEach(function (gid) {
      if (ids.indexOf(gid) < 0) {
        placed[gid].wrapper.remove();
        delete placed[gid];
        open.splice(open.indexOf(gid), 1);
      }
    });
    ids.forEach(function (gid) {
      if (!groups[gid] || open.indexOf(gid) >= 0) { return; }
      var view = placed[gid] = drawing(gid);
      graph.appendChild(view.wrapper);
      place(gid, view);
      open.push(gid);
    });
    setSteps();
  }

  /* Open or close one group, staying at the step shown (a group opened at its own
   * step starts at its first op; closed from inside, the page is at its step). */
  function toggle(gid) {
    var entry = entries[bpv.current()];
    var opening = open.indexOf(gid) < 0;
    setOpen(opening ? open.concat([gid]) : open.filter(function (id) { return id !== gid; }));
    var step = groups[gid].step;
    var want = entry;
    if (opening && !entry.group && entry.outer === step) { want = { group: gid, inner: 1 }; }
    if (!opening && entry.group === gid) { want = { outer: step }; }
    var target = entries.findIndex(function (candidate) {
      return candidate.group === want.group && candidate.inner === want.inner &&
        (Boolean(want.group) || candidate.outer === want.outer);
    });
    bpv.go(Math.max(0, target));
    refit();
    // The keyboard stays where it was: on the frame that opened, on the operator closed.
    var focus = opening ? document.querySelector(
      '.opened-group[data-group="' + gid + '"] .group-frame') : document.getElementById(gid);
    if (focus && focus.focus) { focus.focus({ preventScroll: true }); }
  }

  function activate(target) {
    var frame = target.closest(".group-frame");
    if (frame) { toggle(frame.parentNode.getAttribute("data-group")); return true; }
    var node = target.closest("g.node");
    if (node && groups[node.id] && open.indexOf(node.id) < 0) { toggle(node.id); return true; }
    return false;
  }

  // The stage captures the pointer to pan: a press and release in one place is a click.
  var pressed = null;
  svg.addEventListener("pointerdown", function (event) {
    pressed = { target: event.target, x: event.clientX, y: event.clientY };
  });
  window.addEventListener("pointerup", function (event) {
    var was = pressed;
    pressed = null;
    if (was && Math.hypot(event.clientX - was.x, event.clientY - was.y) < 5) {
      activate(was.target);
    }
  });
  svg.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && activate(event.target)) { event.preventDefault(); }
  });

  function openInAddress() {
    var found = /open=([^&]*)/.exec(window.location.hash);
    return found && found[1] ? found[1].split(",").filter(function (id) { return groups[id]; }) : [];
  }
  function stepInAddress() {
    var found = /step=(\d+)/.exec(window.location.hash);
    return found ? Number(found[1]) : 0;
  }
  function follow() {
    var ids = openInAddress();
    var changed = ids.join(",") !== open.join(",");
    if (changed) { setOpen([]); setOpen(ids); }
    bpv.go(stepInAddress(), "address");
    if (changed) { refit(); }
  }
  window.addEventListener("popstate", follow);
  window.addEventListener("hashchange", follow);
  follow();
}());
