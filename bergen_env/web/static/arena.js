// The arena: every leaderboard (ratings with their 95% intervals, drawn to scale), the form that
// submits a policy file, and one policy's page with its results and a table against it.
import { loadCatalog, t, translatePage, languageSelect, lang, errorText, request } from "./i18n.js";
import { presetName } from "./describe.js";

const $ = (id) => document.getElementById(id);
const policySha = (location.pathname.match(/^\/arena\/([0-9a-f]{64})$/) || [])[1];
let data = null;

function notice(text, info = false) {
  const box = $("notice");
  box.textContent = text;
  box.className = info ? "notice info" : "notice";
  box.hidden = !text;
}

function cell(row, text, cls = "") {
  const td = document.createElement(row.parentElement && row.parentElement.tagName === "THEAD" ? "th" : "td");
  if (text instanceof Node) td.appendChild(text); else td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function rulesText(rules) {
  const seating = rules.partnerships ? t("arena_partners") : t("arena_players_n", { n: rules.num_players });
  return `${presetName(rules.name)}, ${seating}`;
}

function nameText(e) {
  let text = e.name;
  if (e.anchor) text += ` (${t("arena_anchor")})`;
  return text;
}

// A bar per agent: its interval as a band and its rating as a tick, on the board's own scale.
function intervalChart(entry, lo, hi) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 100 10");
  svg.setAttribute("class", "interval");
  svg.setAttribute("aria-hidden", "true");
  const x = (r) => (hi > lo ? ((r - lo) / (hi - lo)) * 96 + 2 : 50);
  const band = document.createElementNS(ns, "rect");
  band.setAttribute("x", x(entry.interval[0]));
  band.setAttribute("width", Math.max(0.8, x(entry.interval[1]) - x(entry.interval[0])));
  band.setAttribute("y", 3);
  band.setAttribute("height", 4);
  band.setAttribute("class", entry.provisional ? "band provisional" : "band");
  const tick = document.createElementNS(ns, "rect");
  tick.setAttribute("x", x(entry.rating) - 0.6);
  tick.setAttribute("width", 1.2);
  tick.setAttribute("y", 1);
  tick.setAttribute("height", 8);
  tick.setAttribute("class", "tick");
  svg.append(band, tick);
  return svg;
}

// A best response's gain against the policy with its 95% interval (blank where not measured).
function gainText(x) {
  const f = (v) => (v >= 0 ? "+" : "") + v.toFixed(3);
  return `${f(x.gain)} [${f(x.gain_ci95[0])}, ${f(x.gain_ci95[1])}]`;
}

function renderBoards() {
  const box = $("boards");
  box.replaceChildren();
  $("queue").textContent = t("arena_queued", { n: data.queued });
  const boards = data.boards.filter((b) => b.entries.length);
  if (!boards.length) {
    const p = document.createElement("p");
    p.textContent = t("arena_empty");
    box.appendChild(p);
    return;
  }
  for (const board of boards) {
    const h = document.createElement("h2");
    h.textContent = rulesText(board.rules);
    const wrap = document.createElement("div");
    wrap.className = "scroll";
    const table = document.createElement("table");
    table.className = "arena-board";
    table.dataset.board = board.id;
    const head = table.createTHead().insertRow();
    for (const key of ["arena_rank", "arena_agent", "arena_rating", "arena_interval", "arena_matches", "arena_exploit"]) {
      cell(head, t(key), key === "arena_agent" ? "" : "num");
    }
    cell(head, "", "chart");
    const lo = Math.min(...board.entries.map((e) => e.interval[0]));
    const hi = Math.max(...board.entries.map((e) => e.interval[1]));
    const body = table.createTBody();
    for (const e of board.entries) {
      const row = body.insertRow();
      if (e.provisional) row.className = "provisional";
      cell(row, String(e.rank), "num");
      let name = document.createTextNode(nameText(e));
      if (e.sha256) {
        name = document.createElement("a");
        name.href = `/arena/${e.sha256}?lang=${lang}`;
        name.textContent = nameText(e);
      }
      const who = cell(row, name);
      if (e.provisional) {
        const mark = document.createElement("span");
        mark.className = "mark";
        mark.textContent = ` ${t("arena_provisional")}`;
        who.appendChild(mark);
      }
      cell(row, e.rating.toFixed(0), "num");
      cell(row, `[${e.interval[0].toFixed(0)}, ${e.interval[1].toFixed(0)}]`, "num");
      cell(row, String(e.matches), "num");
      cell(row, e.exploit ? gainText(e.exploit) : "", "num exploit");
      cell(row, intervalChart(e, lo, hi), "chart");
    }
    wrap.appendChild(table);
    box.append(h, wrap);
  }
}

function renderPolicy() {
  const p = data;
  $("policy-name").textContent = p.name;
  $("policy-facts").textContent = [
    rulesText(p.rules),
    t("arena_submitted_by", { name: p.name }),
    `SHA-256 ${p.sha256}`,
    t("arena_parameters", { n: p.parameters }),
  ].join(" · ");
  const e = p.entry;
  $("policy-rating").textContent = e
    ? t("arena_rating_line", {
        rating: e.rating.toFixed(0), lo: e.interval[0].toFixed(0), hi: e.interval[1].toFixed(0), matches: e.matches,
      }) + (e.provisional ? ` (${t("arena_provisional")})` : "")
    : t("arena_waiting", { n: p.queued });
  $("policy-exploit").textContent = p.exploit
    ? t("arena_exploit_line", { gain: gainText(p.exploit), matches: p.exploit.matches })
    : "";
  $("play").href = `${p.play}&lang=${lang}`;
  const table = $("pairs");
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const key of ["arena_opponent", "arena_matches", "arena_score", "arena_wins"]) {
    cell(head, t(key), key === "arena_opponent" ? "" : "num");
  }
  const body = table.createTBody();
  for (const pair of p.pairs) {
    const row = body.insertRow();
    cell(row, pair.opponent);
    cell(row, String(pair.matches), "num");
    cell(row, pair.score.toFixed(3), "num");
    cell(row, String(pair.wins), "num");
  }
}

function render() {
  translatePage();
  $("rules-link").href = `/rules?lang=${lang}`;
  document.title = t("arena_title");
  if (!data) return;
  if (policySha) renderPolicy(); else renderBoards();
}

async function load() {
  const res = await request(policySha ? `/api/arena/${policySha}` : "/api/arena");
  if (!res.ok) {
    notice(errorText(res.body));
    return false;
  }
  data = res.body;
  render();
  return true;
}

// The form posts itself (multipart, answered by a redirect to the policy's page); with this
// script it is sent by fetch instead, so the answer or the refusal shows on this page.
async function submit(event) {
  event.preventDefault();
  if (!$("file").files[0]) return;
  const res = await request("/api/arena", { method: "POST", body: new FormData($("submit")) });
  if (!res.ok) {
    notice(errorText(res.body));
    return;
  }
  notice(res.body.new ? t("arena_received", { n: res.body.queued }) : t("arena_known"), true);
  await load();
}

async function main() {
  await loadCatalog();
  $("lang-slot").appendChild(languageSelect(render));
  $(policySha ? "policy" : "home").hidden = false;
  render();
  if (!policySha) $("submit").addEventListener("submit", submit);
  if (await load()) setInterval(load, 10000);
}

main();
