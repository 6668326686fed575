// The home page: quick start, and a table of any preset, seating and options (its creator goes
// to their seat, where the friends' links are).
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

// Each rule option in words: its label, a one-line hint and its values' names (the catalog's
// opt_NAME, hint_NAME and val_NAME_VALUE); the code name is the field's name only.
function renderOptions() {
  const box = $("options");
  box.replaceChildren();
  const defaults = meta.presets[$("preset").value][seatingKey()];
  if (!defaults) return;
  for (const [name, value] of Object.entries(defaults)) {
    const label = document.createElement("label");
    label.className = "option";
    const title = document.createElement("span");
    title.className = "option-name";
    title.textContent = t(`opt_${name}`);
    const choices = meta.choices[name];
    const input = document.createElement(choices ? "select" : "input");
    input.name = name;
    input.dataset.default = String(value);
    if (choices) {
      for (const c of choices) {
        const opt = document.createElement("option");
        opt.value = c;
        opt.textContent = t(`val_${name}_${c}`);
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
    const hint = document.createElement("small");
    hint.className = "hint";
    hint.textContent = t(`hint_${name}`);
    if (input.type === "checkbox") label.append(input, " ", title, hint);
    else label.append(title, input, hint);
    box.appendChild(label);
  }
}

function render() {
  translatePage();
  $("rules-link").href = `/rules?lang=${lang}`;
  $("arena-link").href = `/arena?lang=${lang}`;
  $("arena-link").hidden = !meta.arena;
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
  location.href = `${out.open}?lang=${lang}`; // the creator's own seat: the friends' links wait there
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
