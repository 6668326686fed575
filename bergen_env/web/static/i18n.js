// The UI texts: one catalog (i18n.json), the language from ?lang=, the saved choice or English.
let catalog = null;
export let lang = "en";

export async function loadCatalog() {
  const res = await fetch("/static/i18n.json");
  catalog = await res.json();
  const asked = new URLSearchParams(location.search).get("lang");
  const saved = localStorage.getItem("bergen-lang");
  const browser = (navigator.language || "en").slice(0, 2);
  lang = [asked, saved, browser, "en"].find((l) => l && catalog[l]);
  document.documentElement.lang = lang;
  return catalog;
}

export function setLang(code) {
  lang = code;
  localStorage.setItem("bergen-lang", code);
  document.documentElement.lang = code;
  const url = new URL(location.href);
  url.searchParams.set("lang", code);
  history.replaceState(null, "", url);
}

export function languages() {
  return Object.keys(catalog).map((code) => [code, catalog[code]._name]);
}

// t("hand_n", {n: 2}) -> "Hand 2"; an unknown key shows itself, so a gap is visible.
export function t(key, fields = {}) {
  const text = (catalog[lang] && catalog[lang][key]) ?? catalog.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, k) => (k in fields ? fields[k] : `{${k}}`));
}

// Fill every element with data-i18n="key" (its text) in the page.
export function translatePage(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
}

export function languageSelect(onChange) {
  const select = document.createElement("select");
  select.id = "lang";
  select.setAttribute("aria-label", "language");
  for (const [code, name] of languages()) {
    const opt = document.createElement("option");
    opt.value = code;
    opt.textContent = name;
    if (code === lang) opt.selected = true;
    select.appendChild(opt);
  }
  select.addEventListener("change", () => {
    setLang(select.value);
    onChange();
  });
  return select;
}

// A refused request's answer ({error, code, params}) in the page's language: seats numbered
// from 1 as the page numbers them; the English message when the catalog has no text for it.
export function errorText(body) {
  if (!body || typeof body !== "object") return t("err_network");
  const key = `err_${body.code}`;
  if (!body.code || !(key in catalog.en)) return body.error || t("err_network");
  const fields = { ...(body.params || {}), detail: body.error };
  for (const k of ["seat", "turn"]) if (typeof fields[k] === "number") fields[k] += 1;
  return t(key, fields);
}

// fetch that answers {ok, status, body}; a network failure or a non-JSON answer is a code too.
export async function request(url, options = {}) {
  try {
    const res = await fetch(url, options);
    let body;
    try { body = await res.json(); } catch { body = { code: "network" }; }
    return { ok: res.ok, status: res.status, body };
  } catch {
    return { ok: false, status: 0, body: { code: "network" } };
  }
}
