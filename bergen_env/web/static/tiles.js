// Domino tiles as SVG: pips in a 3x3 grid per half; doubles in the line are laid crosswise.
const NS = "http://www.w3.org/2000/svg";

// Pip positions (column, row) in a half's 3x3 grid for 0..6.
const PIPS = [
  [],
  [[1, 1]],
  [[0, 0], [2, 2]],
  [[0, 0], [1, 1], [2, 2]],
  [[0, 0], [2, 0], [0, 2], [2, 2]],
  [[0, 0], [2, 0], [1, 1], [0, 2], [2, 2]],
  [[0, 0], [1, 0], [2, 0], [0, 2], [1, 2], [2, 2]],
];

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// Draw the tile [a|b] into group g at (x, y); unit u is the side of one half.
// vertical: a on top; faceDown: the back only.
export function drawTile(g, a, b, x, y, u, { vertical = false, faceDown = false, cls = "" } = {}) {
  const w = vertical ? u : 2 * u;
  const h = vertical ? 2 * u : u;
  const tile = el("g", { class: `tile ${cls}`.trim(), transform: `translate(${x},${y})` }, g);
  el("rect", { x: 1, y: 1, width: w - 2, height: h - 2, rx: u * 0.14, class: faceDown ? "back" : "face" }, tile);
  if (faceDown) return tile;
  if (vertical) el("line", { x1: u * 0.18, y1: u, x2: u * 0.82, y2: u, class: "divider" }, tile);
  else el("line", { x1: u, y1: u * 0.18, x2: u, y2: u * 0.82, class: "divider" }, tile);
  const r = u * 0.085;
  [a, b].forEach((n, half) => {
    const ox = vertical ? 0 : half * u;
    const oy = vertical ? half * u : 0;
    for (const [c, rr] of PIPS[n]) {
      // in a horizontal half the six shows as two rows of three; in a vertical half, columns
      const [px, py] = vertical ? [rr, c] : [c, rr];
      el("circle", { cx: ox + u * (0.25 + 0.25 * px), cy: oy + u * (0.25 + 0.25 * py), r, class: "pip" }, tile);
    }
  });
  return tile;
}

// A standalone SVG of one tile (for the hand and the revealed hands).
export function tileSVG(a, b, { u = 40, vertical = true, faceDown = false, cls = "" } = {}) {
  const w = vertical ? u : 2 * u;
  const h = vertical ? 2 * u : u;
  const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: "tile-svg" });
  drawTile(svg, a, b, 0, 0, u, { vertical, faceDown, cls });
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", faceDown ? "tile" : `[${a}|${b}]`);
  return svg;
}

// The line in one SVG of `width` px: one row, the tiles as large as fit (up to `maxU` px a half);
// when the row would make a half smaller than `minU` px, the line wraps like a snake: the next
// row runs back the other way, its tiles turned so that touching halves still match.
// Doubles stand crosswise.
export function lineSVG(line, { width = 800, maxU = 40, minU = 20, gapU = 0.08, highlight = null } = {}) {
  const units = (tile) => (tile[0] === tile[1] ? 1 : 2) + gapU; // a tile's length in halves
  const total = line.reduce((sum, tile) => sum + units(tile), 0) - gapU;
  let u = Math.min(maxU, width / Math.max(total, 2));
  const rows = [];
  if (u >= minU) rows.push(line.map((tile, i) => i));
  else {
    u = minU;
    const room = width / u + gapU;
    let row = [];
    let used = 0;
    line.forEach((tile, i) => {
      if (row.length && used + units(tile) > room) { rows.push(row); row = []; used = 0; }
      row.push(i);
      used += units(tile);
    });
    if (row.length) rows.push(row);
  }
  const rowGap = u * 0.3;
  const height = rows.length * 2 * u + (rows.length - 1) * rowGap;
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "line-svg" });
  svg.dataset.rows = rows.length;
  svg.dataset.unit = u.toFixed(1);
  rows.forEach((row, r) => {
    const y0 = r * (2 * u + rowGap);
    const rowWidth = row.reduce((sum, i) => sum + units(line[i]), 0) * u - gapU * u;
    const back = r % 2 === 1; // a row that runs right to left
    let x = rows.length === 1 ? (width - rowWidth) / 2 : back ? width : 0;
    for (const i of row) {
      const [a, b] = line[i];
      const cls = highlight !== null && highlight.includes(i) ? "last" : "";
      const w = (a === b ? 1 : 2) * u;
      if (back) x -= w;
      if (a === b) drawTile(svg, a, b, x, y0, u, { vertical: true, cls });
      else if (back) drawTile(svg, b, a, x, y0 + u / 2, u, { cls });
      else drawTile(svg, a, b, x, y0 + u / 2, u, { cls });
      if (back) x -= gapU * u;
      else x += w + gapU * u;
    }
  });
  return svg;
}
