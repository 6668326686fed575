// The home page: quick start, a table of any preset, seating and options, and its links.
import { loadCatalog, t, translatePage, languageSelect, lang, errorText, request } from "./i18n.js";
import { kindName, presetName } from "./describe.js";

const $ = (id) => document.getElementById(id);
let meta = null;

function seatingKey() {
  const n = $("players").value;
  return `${n}${n === "4" && $("partnerships").checked ? "p" : ""}`;
}

// The rule options that differ from the preset's for this seating: {name: value}.
function changedOptions() {
  const options = {};
  for (const input of $("options").querySelectorAll("input, select")) {
    const value = input.type === "checkbox" ? input.checked : input.type === "number" ? Number(input.value) : input.value;
    if (String(value) !== input.dataset.default) options[input.name] = value;
  }
  return options;
}

// The seat choices: a person or an agent of the menu; agents that play unchanged presets only
// (meta.presets_only) are left out while an option differs from the preset.
function renderSeats() {
  const box = $("seats");
  const old = [...box.querySelectorAll("select")].map((s) => s.value);
  box.replaceChildren();
  const n = Number($("players").value);
  $("partnerships").disabled = n !== 4;
  const custom = Object.keys(changedOptions()).length > 0;
  const kinds = ["person", ...meta.agents.filter((k) => !(custom && meta.presets_only.includes(k)))];
  for (let i = 0; i < n; i++) {
    const label = document.createElement("label");
    label.textContent = t("seat_label", { n: i + 1 }) + " ";
    const select = document.createElement("select");
    select.name = `seat${i}`;
    for (const kind of kinds) {
      const opt = document.createElement("option");
      opt.value = kind;
      opt.textContent = kind === "person" ? t("person") : kindName(kind);
      select.appendChild(opt);
    }
    select.value = kinds.includes(old[i]) ? old[i] : i === 0 ? "person" : "greedy";
    label.appendChild(select);
    box.appendChild(label);
  }
}

function renderOptions() {
  const box = $("options");
  box.replaceChildren();
  const defaults = meta.presets[$("preset").value][seatingKey()];
  if (!defaults) return;
  for (const [name, value] of Object.entries(defaults)) {
    const label = document.createElement("label");
    label.textContent = name + " ";
    const choices = meta.choices[name];
    const input = document.createElement(choices ? "select" : "input");
    input.name = name;
    input.dataset.default = String(value);
    if (choices) {
      for (const c of choices) {
        const opt = document.createElement("option");
        opt.value = opt.textContent = c;
        input.appendChild(opt);
      }
      input.value = value;
    } else if (typeof value === "boolean") { input.type = "checkbox"; input.checked = value; }
    else if (typeof value === "number") {
      input.type = "number";
      input.min = 0;
      if (name in meta.option_limits) input.max = meta.option_limits[name]; // a web table's bound
      input.value = value;
    }
    else input.value = value;
    label.appendChild(input);
    box.appendChild(label);
  }
}

function render() {
  translatePage();
  $("rules-link").href = `/rules?lang=${lang}`;
  $("quick").href = `/play?num_players=2&opponents=greedy&lang=${lang}`;
  $("watch").href = `/play?seats=heuristic,search&lang=${lang}`;
  const preset = $("preset");
  const chosen = preset.value;
  preset.replaceChildren();
  for (const name of Object.keys(meta.presets)) {
    const opt = document.createElement("option");
    opt.value = name;
    opt.textContent = presetName(name);
    preset.appendChild(opt);
  }
  if (chosen) preset.value = chosen;
  renderOptions();
  renderSeats();
}

async function create(event) {
  event.preventDefault();
  const options = changedOptions();
  const body = {
    rules: $("preset").value,
    num_players: Number($("players").value),
    partnerships: $("players").value === "4" && $("partnerships").checked,
    seats: [...$("seats").querySelectorAll("select")].map((s) => s.value),
    options, lang,
  };
  const button = $("create").querySelector("button[type=submit]");
  button.disabled = true; // one table per press
  const res = await request("/api/tables", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  button.disabled = false;
  const out = res.body;
  if (!res.ok) { $("notice").textContent = errorText(out); $("notice").hidden = false; return; }
  $("notice").hidden = true;
  const people = out.seats.filter((s) => s.link);
  if (people.length === 1) { location.href = `${people[0].link}?lang=${lang}`; return; }
  const box = $("links");
  box.hidden = false;
  box.replaceChildren();
  const h = document.createElement("h2");
  h.textContent = t("share");
  box.appendChild(h);
  const row = (label, path) => {
    const p = document.createElement("p");
    const a = document.createElement("a");
    a.href = `${path}?lang=${lang}`;
    a.textContent = new URL(path, location.origin).href;
    p.append(label + " ", a);
    box.appendChild(p);
  };
  for (const s of people) row(t("seat_label", { n: s.seat + 1 }), s.link);
  row(t("spectators"), out.watch);
}

async function main() {
  await loadCatalog();
  meta = await (await fetch("/api/meta")).json();
  $("lang-slot").appendChild(languageSelect(render));
  for (const id of ["preset", "players", "partnerships"]) $(id).addEventListener("change", () => { renderOptions(); renderSeats(); });
  for (const type of ["input", "change"]) $("options").addEventListener(type, renderSeats);
  $("create").addEventListener("submit", create);
  render();
}

main();
