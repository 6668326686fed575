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

// The line left to right in one SVG that scales to its box; doubles stand crosswise.
export function lineSVG(line, { u = 40, gap = 3, highlight = null } = {}) {
  let width = 0;
  for (const [a, b] of line) width += (a === b ? u : 2 * u) + gap;
  width = Math.max(width - gap, 2 * u);
  const svg = el("svg", { viewBox: `0 0 ${width} ${2 * u}`, class: "line-svg", preserveAspectRatio: "xMidYMid meet" });
  svg.style.maxWidth = `${width * 1.4}px`;
  let x = 0;
  line.forEach(([a, b], i) => {
    const cls = highlight !== null && highlight.includes(i) ? "last" : "";
    if (a === b) {
      drawTile(svg, a, b, x, 0, u, { vertical: true, cls });
      x += u + gap;
    } else {
      drawTile(svg, a, b, x, u / 2, u, { vertical: false, cls });
      x += 2 * u + gap;
    }
  });
  return svg;
}
