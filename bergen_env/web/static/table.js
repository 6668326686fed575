// A table's page: a seat (/s/TOKEN) or a spectator (/w/TABLE). The server sends the whole view
// the seat may know on every change (WebSocket); moves go to the API, which decides legality.
// A view is drawn once per version, whichever of the move's answer and the socket brings it
// first; the hand's buttons are kept from one view to the next (one listener reads the view
// current at the tap), so a tap is never lost to a redraw.
import { loadCatalog, t, translatePage, languageSelect, lang, errorText, request } from "./i18n.js";
import { tileSVG, lineSVG } from "./tiles.js";
import { eventText, resultLines, seatName, sideName, kindName, presetName, tileText } from "./describe.js";

const [, mode, key] = location.pathname.split("/"); // "s", token | "w", table
const isSeat = mode === "s";
const api = isSeat ? `/api/s/${key}` : `/api/w/${key}`;
const wsPath = isSeat ? `/ws/s/${key}` : `/ws/w/${key}`;
let msg = null;
let choosing = null; // tile id whose end is being chosen
let retry = 500;
let fatal = false;
let busy = false; // a move (or rematch) is on its way: no second one until it is answered
let renders = 0; // views drawn (for tests and tools: one per version)
let shareShown = false; // the share box opened once, while the table is new
let shareKey = ""; // what the share box shows: rebuilt only when that changes
const tileButtons = new Map(); // "id:copy" -> its button in the hand, kept across views

const $ = (id) => document.getElementById(id);
function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function notice(text, kind = "error") {
  const box = $("notice");
  box.textContent = text;
  box.className = `notice ${kind}`;
  box.hidden = !text;
}

async function post(path, payload) {
  if (busy) return;
  setBusy(true);
  choosing = null;
  renderChoose();
  const res = await request(`${api}/${path}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload),
  });
  if (!res.ok) {
    notice(errorText(res.body));
    if (res.body.code === "stale_view") { // the view is behind: show the current one
      const now = await request(api);
      if (now.ok) show(now.body);
    }
  } else { notice(""); show(res.body); }
  setBusy(false); // the buttons again, in whichever view is the newest
}

// While a move is on its way every button of the seat waits; no view is redrawn for it.
function setBusy(value) {
  busy = value;
  document.body.classList.toggle("busy", busy);
  for (const b of document.querySelectorAll("#me button, #over button")) {
    b.disabled = busy || b.dataset.live !== "true";
  }
}

const move = (action) => post("move", { action, version: msg.version });

function show(next) {
  if (msg && next.version <= msg.version && next.table === msg.table) return; // shown already
  msg = next;
  if (msg.error) notice(msg.error); // an agent failed: the table stopped
  render();
}

function render() {
  if (!msg) return;
  renders += 1;
  document.body.dataset.renders = renders;
  document.body.dataset.version = msg.version; // for tests and tools: the view shown
  document.body.dataset.over = msg.over;
  document.body.dataset.match = msg.match;
  document.body.dataset.seat = msg.seat === null ? "" : msg.seat;
  translatePage();
  $("rules-link").href = `/rules?lang=${lang}`;
  const g = msg.game;
  $("game").textContent = `${presetName(g.name)} · ${t("players_n", { n: g.num_players })}${g.partnerships ? " · " + t("partnerships") : ""} · ${t("hand_n", { n: msg.hand_number + 1 })}`;
  $("watching").hidden = isSeat;
  $("watching").textContent = isSeat ? "" : t("watching");
  renderScores();
  renderOpponents();
  renderBoard();
  renderMe();
  renderLog();
  renderOver();
  renderShare();
  setBusy(busy);
}

function renderScores() {
  const box = $("scores");
  box.replaceChildren();
  msg.scores.forEach((score, side) => {
    const row = node("div", "score");
    if (msg.turn !== null && msg.game.side_of[msg.turn] === side) row.classList.add("turn");
    row.appendChild(node("span", "who", sideName(msg, side)));
    const target = msg.game.target; // 0: no target (a one-hand game)
    if (target > 0) {
      const bar = node("span", "bar");
      const fill = node("span", "fill");
      fill.style.width = `${Math.max(0, Math.min(100, (100 * score) / target))}%`;
      bar.appendChild(fill);
      row.appendChild(bar);
    }
    row.appendChild(node("span", "num", target > 0 ? t("score_of", { s: score, target }) : String(score)));
    box.appendChild(row);
  });
}

function renderOpponents() {
  const box = $("opponents");
  box.replaceChildren();
  for (const s of msg.seats) {
    if (s.seat === msg.seat) continue;
    const card = node("div", "opponent");
    if (msg.turn === s.seat) card.classList.add("turn");
    if (msg.seat !== null && msg.game.partnerships && msg.game.side_of[msg.seat] === s.side) card.classList.add("partner");
    card.appendChild(node("div", "who", seatName(msg, s.seat)));
    const backs = node("div", "backs");
    for (let i = 0; i < Math.min(s.hand_size, 10); i++) backs.appendChild(tileSVG(0, 0, { u: 14, faceDown: true }));
    card.appendChild(backs);
    card.appendChild(node("div", "count", t("tiles_n", { n: s.hand_size })));
    box.appendChild(card);
  }
}

function renderBoard() {
  const line = $("line");
  line.replaceChildren();
  if (msg.line.length) line.appendChild(lineSVG(msg.line, { width: Math.max(160, line.clientWidth) }));
  else line.appendChild(node("div", "empty", t("empty_line")));
  const ends = msg.ends;
  for (const [i, id] of [[0, "end-left"], [1, "end-right"]]) {
    const el = $(id);
    if (!ends) { el.textContent = ""; continue; }
    el.textContent = t(i ? "end_right" : "end_left", { n: ends[i] }) + (msg.end_doubles[i] ? ` (${t("double")})` : "");
  }
  $("boneyard").textContent = t("boneyard", { n: msg.boneyard, d: msg.drawable });
}

function legalByTile() {
  const map = new Map();
  for (const m of msg.legal) {
    if (m.kind !== "play") continue;
    const id = m.action >> 1;
    if (!map.has(id)) map.set(id, []);
    map.get(id).push(m);
  }
  return map;
}

function renderMe() {
  const me = $("me");
  me.hidden = !isSeat;
  if (!isSeat) return;
  const status = $("status");
  if (msg.over) status.textContent = "";
  else if (msg.turn === msg.seat) status.textContent = t("your_turn");
  else status.textContent = t("waiting_for", { who: seatName(msg, msg.turn) });
  status.classList.toggle("go", !msg.over && msg.turn === msg.seat);
  const legal = legalByTile();
  const hand = $("hand");
  const copies = new Map(); // two sets deal a tile twice: each copy keeps its own button
  const keys = msg.hand.map(([, , id]) => {
    copies.set(id, (copies.get(id) || 0) + 1);
    return `${id}:${copies.get(id)}`;
  });
  for (const [k, button] of tileButtons) if (!keys.includes(k)) { button.remove(); tileButtons.delete(k); }
  let at = hand.firstChild; // the hand in its order, moving no button that is in place
  msg.hand.forEach(([a, b, id], i) => {
    let button = tileButtons.get(keys[i]);
    if (!button) {
      button = node("button", "tile-btn");
      button.appendChild(tileSVG(a, b, { u: 34 }));
      button.dataset.tile = `${a}-${b}`;
      button.dataset.id = id;
      button.setAttribute("aria-label", tileText([a, b]));
      tileButtons.set(keys[i], button);
    }
    if (button === at) at = at.nextSibling;
    else hand.insertBefore(button, at);
    const live = legal.has(id);
    button.classList.toggle("legal", live);
    button.dataset.live = live;
  });
  if (choosing !== null && !legal.has(choosing)) choosing = null;
  renderChoose();
  const actions = $("actions");
  actions.replaceChildren();
  for (const m of msg.legal) {
    if (m.kind === "play") continue;
    const label = m.kind === "draw" ? t("draw") : m.kind === "pass" ? t("pass") : t("double_play", { tile: tileText(m.tile) });
    const b = node("button", `act act-${m.kind}`, label);
    b.dataset.action = m.kind;
    b.dataset.live = true;
    b.addEventListener("click", () => move(m.action));
    actions.appendChild(b);
  }
}

// The question "which end?" for the tile being chosen (a change of the seat's own page only).
function renderChoose() {
  const legal = legalByTile();
  for (const button of tileButtons.values()) button.classList.toggle("chosen", Number(button.dataset.id) === choosing);
  const choose = $("choose");
  choose.replaceChildren();
  choose.hidden = choosing === null || !legal.has(choosing);
  if (choose.hidden) return;
  const moves = legal.get(choosing);
  choose.appendChild(node("span", "", t("choose_end", { tile: tileText(moves[0].tile) })));
  for (const m of moves) {
    const b = node("button", "end-btn", t(m.end ? "on_right" : "on_left", { n: msg.ends[m.end] }));
    b.dataset.end = m.end ? "right" : "left";
    b.dataset.live = true;
    b.disabled = busy;
    b.addEventListener("click", () => move(m.action));
    choose.appendChild(b);
  }
}

// A tap on a tile of the hand, read against the view shown at the tap: one move plays at once,
// two (both ends fit) ask which end.
function tapTile(event) {
  const button = event.target.closest(".tile-btn");
  if (!button || busy || !msg) return;
  const id = Number(button.dataset.id);
  const moves = legalByTile().get(id);
  if (!moves) return;
  if (moves.length === 1) move(moves[0].action);
  else { choosing = id; renderChoose(); }
}

function renderLog() {
  const log = $("log");
  log.replaceChildren();
  for (const ev of msg.events) {
    const li = node("li", ev.points > 0 ? "scored" : "", eventText(msg, ev));
    log.appendChild(li);
  }
  log.scrollTop = log.scrollHeight;
  const last = msg.last_result;
  const box = $("last-hand");
  box.hidden = !last;
  if (!last) return;
  box.replaceChildren(node("h3", "", t("hand_ended", { n: last.hand + 1 })));
  for (const line of resultLines(msg, last, last.tallies)) box.appendChild(node("p", "", line));
  if (last.events && last.events.length) { // the ended hand's log stays readable
    const details = node("details", "previous-log");
    details.open = msg.events.length === 0;
    details.appendChild(node("summary", "", t("previous_hand_log", { n: last.hand + 1 })));
    const ol = node("ol", "log");
    for (const ev of last.events) ol.appendChild(node("li", ev.points > 0 ? "scored" : "", eventText(msg, ev)));
    details.appendChild(ol);
    box.appendChild(details);
  }
  box.appendChild(node("div", "revealed-title", t("revealed")));
  last.hands.forEach((tiles, seat) => { // the only time the others' tiles are seen: readable size
    const row = node("div", "revealed");
    row.appendChild(node("div", "who", seatName(msg, seat)));
    const shown = node("div", "tiles");
    if (!tiles.length) shown.appendChild(node("span", "none", "—"));
    for (const [a, b] of tiles) shown.appendChild(tileSVG(a, b, { u: 24 }));
    row.appendChild(shown);
    box.appendChild(row);
  });
}

function renderOver() {
  const box = $("over");
  box.hidden = !msg.over;
  if (!msg.over) return;
  const g = msg.game;
  let title;
  if (msg.winner === null) title = t("no_winner");
  else if (msg.seat !== null) title = g.side_of[msg.seat] === msg.winner ? t("you_win") : t("you_lose");
  else title = t("wins", { side: sideName(msg, msg.winner) });
  box.replaceChildren(node("h2", "", t("match_over") + " — " + title));
  box.appendChild(node("p", "", msg.scores.map((s, side) => `${sideName(msg, side)}: ${s}`).join(" · ")));
  if (msg.end_reason === "hand_cap") box.appendChild(node("p", "", t("hand_cap", { n: msg.hands_done })));
  const row = node("div", "links");
  const add = (href, text, id) => {
    const a = node("a", "button", text);
    a.href = href;
    a.id = id;
    row.appendChild(a);
  };
  if (msg.seat !== null) {
    const b = node("button", "", t("rematch"));
    b.id = "again";
    b.dataset.live = true;
    b.addEventListener("click", () => post("rematch", {}));
    row.appendChild(b);
  }
  add(`/?lang=${lang}`, t("new_table"), "new-table");
  add(`/replay/${msg.table}?lang=${lang}`, t("view_replay"), "replay");
  add(`/api/w/${msg.table}/replay`, t("download_replay"), "download");
  box.appendChild(row);
}

// The creator's links (only their page gets msg.share): each friend's, labelled by the seat
// its holder plays now, and the spectators', each with a copy button. With friends to invite it
// is open on a page opened in the first hand of the table, folded on one opened later.
function renderShare() {
  const box = $("share");
  box.hidden = !msg.share;
  if (!msg.share) return;
  const friends = (msg.share.seats || msg.share.links || []).filter(
    (s) => (s.link || s.url) && !(typeof s.seat === "number" && s.seat === msg.seat),
  );
  if (!shareShown) box.open = friends.length > 0 && msg.match === 0 && msg.hands_done === 0;
  shareShown = true;
  const labels = friends.map((s) => [s.link || s.url, s.seat, s.owner, s.label]);
  const key = JSON.stringify([lang, labels, msg.seats.map((s) => s.kind), msg.share.watch]);
  if (key === shareKey) return; // the same links: a copy being tapped stays where it is
  shareKey = key;
  const body = $("share-body");
  body.replaceChildren();
  if (friends.length) body.appendChild(node("p", "share-intro", t("share_intro")));
  const entry = (label, path) => {
    const row = node("div", "share-row");
    row.appendChild(node("span", "share-label", label));
    const input = node("input");
    input.readOnly = true;
    input.value = new URL(path, location.origin).href;
    input.setAttribute("aria-label", label);
    input.addEventListener("focus", () => input.select());
    const button = node("button", "copy", t("copy"));
    button.type = "button";
    button.addEventListener("click", () => copyLink(input, button));
    row.append(input, button);
    body.appendChild(row);
  };
  for (const s of friends) { // no agent's seat, not this page's own link
    const who = typeof s.seat === "number" ? seatName(msg, s.seat) : String(s.owner ?? s.label ?? "");
    entry(t("link_of", { who }), s.link || s.url);
  }
  entry(t("spectators"), msg.share.watch);
}

async function copyLink(input, button) {
  try {
    await navigator.clipboard.writeText(input.value);
  } catch { // no clipboard API (a page over plain http): copy the selected text
    input.select();
    document.execCommand("copy");
  }
  button.textContent = t("copied");
  setTimeout(() => { button.textContent = t("copy"); }, 1500);
}

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${wsPath}`);
  ws.onopen = () => { retry = 500; notice(""); };
  ws.onmessage = (e) => {
    const data = JSON.parse(e.data);
    if (data.type === "state") show(data);
    else if (data.type === "error") notice(errorText(data), data.code === "restarting" ? "info" : "error");
  };
  ws.onclose = (e) => {
    const full = e.code === 4429; // too many pages open: try again later, keep its notice
    if (e.code >= 4400 && e.code < 4500 && !full) { fatal = true; return; }
    if (fatal) return;
    if (e.code !== 1012 && !full) notice(t("reconnecting"), "info"); // 1012: it restarts
    setTimeout(connect, full ? Math.max(retry, 5000) : retry);
    retry = Math.min(retry * 2, full ? 30000 : 5000);
  };
}

// A new width lays the line out again; nothing else is redrawn (a phone's toolbar that hides on
// scrolling changes the height only).
let resizing = null;
let width = window.innerWidth;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => {
    if (!msg || window.innerWidth === width) return;
    width = window.innerWidth;
    renderBoard();
  }, 100);
});

async function main() {
  await loadCatalog();
  translatePage();
  $("lang-slot").appendChild(languageSelect(render));
  $("hand").addEventListener("click", tapTile);
  const res = await request(api);
  if (!res.ok) { notice(errorText(res.body)); $("table").hidden = true; return; }
  show(res.body);
  connect();
}

main();
