// A quick-start link (/play?num_players=2&opponents=greedy...): this page asks the server for the
// table with a same-origin JSON request, then opens the seat (or the spectator page).
import { loadCatalog, translatePage, errorText, lang } from "./i18n.js";

async function main() {
  await loadCatalog();
  translatePage();
  const query = Object.fromEntries(new URLSearchParams(location.search));
  const res = await fetch("/api/play", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query }),
  });
  const body = await res.json();
  if (!res.ok) {
    const box = document.getElementById("notice");
    box.textContent = errorText(body);
    box.hidden = false;
    document.getElementById("status").hidden = true;
    return;
  }
  location.replace(`${body.open}?lang=${lang}`);
}

main();
