// Words for what happened: seats, sides, moves, what a play scored and how a hand ended.
import { t } from "./i18n.js";

export const tileText = ([a, b]) => `[${a}|${b}]`;

export function kindName(kind) {
  if (kind === "person") return t("person");
  const key = `agent_${kind}`;
  const text = t(key);
  return text === key ? kind : text;
}

export function presetName(name) {
  const key = `preset_${name}`;
  const text = t(key);
  return text === key ? name : text;
}

// "You", or "Seat 2 (greedy)".
export function seatName(msg, seat) {
  if (msg.seat !== null && msg.seat === seat) return t("you");
  return t("seat_n", { n: seat + 1, kind: kindName(msg.seats[seat].kind) });
}

// A side is "you" in a game without partners, at the reader's own seat.
function isYou(msg, side) {
  return !msg.game.partnerships && msg.seat !== null && msg.game.side_of[msg.seat] === side;
}

// A line whose subject is a seat, built for the reader: the "_you" text (its verb in the
// reader's person) at their own seat, else the text with {who} filled in.
function personal(msg, key, seat, fields = {}) {
  if (msg.seat !== null && msg.seat === seat) return t(`${key}_you`, fields);
  return t(key, { who: seatName(msg, seat), ...fields });
}

export function sideName(msg, side) {
  const game = msg.game;
  if (!game.partnerships) return seatName(msg, side);
  const seats = game.side_of.map((s, i) => (s === side ? i + 1 : null)).filter((x) => x !== null);
  const mine = msg.seat !== null && game.side_of[msg.seat] === side;
  return t(mine ? "your_team" : "team_n", { n: side + 1, seats: seats.join("+") });
}

function scoreText(score, points) {
  if (!score || score.kind === "none") return "";
  if (score.kind === "fives") return t("sc_fives", { c: score.count, p: points });
  let text = t(score.doubles ? "sc_header_doubles" : "sc_header", {
    n: score.number, d: score.doubles, p: points,
  });
  if (points < score.full) text += " " + t("sc_capped", { full: score.full, p: points });
  return text;
}

export function eventText(msg, ev) {
  const line = (key, fields) => personal(msg, key, ev.seat, fields);
  let text;
  if (ev.kind === "draw") text = line("ev_draw");
  else if (ev.kind === "pass") text = line("ev_pass");
  else if (ev.kind === "double_play") text = line("ev_double", { tile: tileText(ev.tile) });
  else if (ev.opens) text = line("ev_open", { tile: tileText(ev.tile) });
  else text = line("ev_play", { tile: tileText(ev.tile), end: t(ev.end ? "right" : "left") });
  const scored = scoreText(ev.score, ev.points);
  return scored ? `${text} — ${scored}` : text;
}

// Lines that say how a hand ended (result: a hand summary of the table, or a replay result).
export function resultLines(msg, res, tallies = null) {
  const lines = [];
  const winner = res.winner;
  if (res.reason === "target") {
    lines.push(isYou(msg, winner) ? t("end_target_you") : t("end_target", { side: sideName(msg, winner) }));
    return lines;
  }
  if (res.reason === "domino") {
    const key = msg.game.partnerships ? "end_domino_team" : "end_domino";
    lines.push(personal(msg, key, res.seat, { side: sideName(msg, winner), p: res.points[winner] }));
  } else {
    const rule = res.blocked_rule || msg.game.blocked_rule;
    lines.push(t("end_blocked", { rule: t(`rule_${rule}`) }));
    if (tallies) {
      tallies.forEach((tl, side) => {
        const low = tl.lowest_double === null ? "" : t("lowest_double", { n: tl.lowest_double });
        lines.push(t("tally", { side: sideName(msg, side), d: tl.doubles, p: tl.pips, low }));
      });
    }
    if (winner === null) lines.push(t("end_tie"));
    else if (isYou(msg, winner)) lines.push(t("end_blocked_win_you", { p: res.points[winner] }));
    else lines.push(t("end_blocked_win", { side: sideName(msg, winner), p: res.points[winner] }));
  }
  res.points.forEach((p, side) => {
    if (p < 0) lines.push(t("leftover", { side: sideName(msg, side), p: -p }));
  });
  return lines;
}
