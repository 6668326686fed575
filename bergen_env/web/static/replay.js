// Step through a replay (a bergen-replay/1 file or a finished table), every hand shown.
import { loadCatalog, t, translatePage, languageSelect, lang, errorText } from "./i18n.js";
import { tileSVG, lineSVG } from "./tiles.js";
import { eventText, resultLines, presetName, seatName, sideName } from "./describe.js";

const $ = (id) => document.getElementById(id);
let data = null;
let pos = 0;
let fileText = null;

function notice(text) { $("notice").textContent = text; $("notice").hidden = !text; }

// Names in a replay: seats by number and the agent named in the record.
function view() {
  const g = data.game;
  return { seat: null, game: g, seats: data.agents.map((kind, seat) => ({ seat, kind })) };
}

function render() {
  translatePage();
  $("rules-link").href = `/rules?lang=${lang}`;
  if (!data) return;
  const v = view();
  const f = data.frames[pos];
  const g = data.game;
  $("game").textContent = `${presetName(g.name)} · ${t("players_n", { n: g.num_players })} · ${t("hand_n", { n: f.hand + 1 })}`;
  $("pos").textContent = t("frame", { i: pos, n: data.frames.length - 1 });
  const scores = $("scores");
  scores.replaceChildren();
  f.scores.forEach((s, side) => {
    const d = document.createElement("div");
    d.className = "score";
    d.textContent = `${sideName(v, side)}: ${g.target > 0 ? t("score_of", { s, target: g.target }) : s}`;
    scores.appendChild(d);
  });
  const ev = f.event;
  let what = t("dealt");
  if (ev) { // the log's words (a replay has no reader's seat: every line in the third person)
    const opens = ev.kind === "play" && f.line.length === 1;
    what = eventText(v, { ...ev, end: ev.action & 1, opens, score: null });
  }
  $("what").textContent = what;
  $("line").replaceChildren(f.line.length ? lineSVG(f.line, { width: Math.max(160, $("line").clientWidth - 16) }) : document.createTextNode(t("empty_line")));
  $("boneyard").textContent = t("boneyard_replay", { n: f.boneyard });
  const hands = $("hands");
  hands.replaceChildren();
  f.hands.forEach((tiles, seat) => {
    const row = document.createElement("div");
    row.className = "revealed" + (ev && ev.seat === seat ? " turn" : "");
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = seatName(v, seat);
    row.appendChild(who);
    for (const [a, b] of tiles) row.appendChild(tileSVG(a, b, { u: 20 }));
    hands.appendChild(row);
  });
  const res = $("result");
  res.hidden = !f.result;
  if (f.result) {
    res.replaceChildren();
    for (const line of resultLines(v, f.result, tallies(f.hands))) { const p = document.createElement("p"); p.textContent = line; res.appendChild(p); }
  }
}

// Each side's doubles and pips in the hands shown (what a blocked rule compares).
function tallies(hands) {
  const g = data.game;
  const out = Array.from({ length: g.num_sides }, () => ({ doubles: 0, lowest_double: null, pips: 0 }));
  hands.forEach((tiles, seat) => {
    const tl = out[g.side_of[seat]];
    for (const [a, b] of tiles) {
      tl.pips += a + b;
      if (a === b) {
        tl.doubles += 1;
        tl.lowest_double = tl.lowest_double === null ? a : Math.min(tl.lowest_double, a);
      }
    }
  });
  return out;
}

function go(i) { pos = Math.max(0, Math.min(data.frames.length - 1, i)); render(); }

async function load(res) {
  let body;
  try { body = await res.json(); } catch { body = { code: "network" }; }
  if (!res.ok) { notice(errorText(body)); return; }
  notice("");
  data = body;
  $("viewer").hidden = false;
  const pick = $("match");
  if (body.matches > 1 && pick.options.length !== body.matches) {
    pick.replaceChildren();
    for (let i = 0; i < body.matches; i++) { const o = document.createElement("option"); o.value = i; o.textContent = i + 1; pick.appendChild(o); }
    $("match-pick").hidden = false;
  }
  go(0);
}

async function upload(match) {
  const body = JSON.stringify({ text: fileText, match: Number(match) });
  await load(await fetch("/api/replay", { method: "POST", headers: { "content-type": "application/json" }, body }));
}

async function main() {
  await loadCatalog();
  $("lang-slot").appendChild(languageSelect(render));
  translatePage();
  $("first").onclick = () => go(0);
  $("prev").onclick = () => go(pos - 1);
  $("next").onclick = () => go(pos + 1);
  $("last").onclick = () => go(data.frames.length - 1);
  document.addEventListener("keydown", (e) => {
    if (!data) return;
    if (e.key === "ArrowRight") go(pos + 1);
    if (e.key === "ArrowLeft") go(pos - 1);
  });
  $("file").addEventListener("change", async () => {
    const file = $("file").files[0];
    if (!file) return;
    fileText = await file.text();
    $("match-pick").hidden = true;
    await upload(0);
  });
  $("match").addEventListener("change", () => upload($("match").value));
  const [, , table] = location.pathname.split("/");
  if (table) {
    $("open").hidden = true;
    await load(await fetch(`/api/w/${table}/frames`));
  }
}

main();
