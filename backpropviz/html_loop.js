/* backpropviz page, rolled loop: the block's numbers at the repetition the slider picks
   (the page's data "loop", made by page_loop.py from the engine's numbers). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("bpv-data").textContent).loop;
  var slider = document.getElementById("loop-slider");
  if (!data || !slider) { return; }
  var counter = document.getElementById("loop-counter");
  var body = document.getElementById("loop-rows");
  function cell(row, text, kind) {
    var td = document.createElement("td");
    td.textContent = text === null ? "—" : text;
    if (kind) { td.className = kind; }
    row.appendChild(td);
  }
  var said = document.getElementById("loop-said");
  function show(t) {
    counter.textContent = t + " / " + data.count;
    said.textContent = "the drawing shows repetition " + data.shown + " of " + data.count +
      (t === data.shown ? "" : "; this table, repetition " + t);
    body.textContent = "";
    data.rows.forEach(function (value) {
      var row = document.createElement("tr");
      row.dataset.value = value.id;
      cell(row, value.names ? value.names[t - 1] : value.name, "name");
      cell(row, value.data[t - 1], "data");
      cell(row, value.grad[t - 1], "grad");
      body.appendChild(row);
    });
  }
  slider.addEventListener("input", function () { show(Number(slider.value)); });
  // Its arrow keys move it, not the page's backward steps.
  slider.addEventListener("keydown", function (event) { event.stopPropagation(); });
  show(Number(slider.value));
}());
