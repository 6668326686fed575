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
  const who = seatName(msg, ev.seat);
  let text;
  if (ev.kind === "draw") text = t("ev_draw", { who });
  else if (ev.kind === "pass") text = t("ev_pass", { who });
  else if (ev.kind === "double_play") text = t("ev_double", { who, tile: tileText(ev.tile) });
  else if (ev.opens) text = t("ev_open", { who, tile: tileText(ev.tile) });
  else text = t("ev_play", { who, tile: tileText(ev.tile), end: t(ev.end ? "right" : "left") });
  const scored = scoreText(ev.score, ev.points);
  return scored ? `${text} — ${scored}` : text;
}

// Lines that say how a hand ended (result: a hand summary of the table, or a replay result).
export function resultLines(msg, res, tallies = null) {
  const lines = [];
  const winner = res.winner;
  if (res.reason === "target") {
    lines.push(t("end_target", { side: sideName(msg, winner) }));
    return lines;
  }
  if (res.reason === "domino") {
    lines.push(t("end_domino", { who: seatName(msg, res.seat), side: sideName(msg, winner), p: res.points[winner] }));
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
    else lines.push(t("end_blocked_win", { side: sideName(msg, winner), p: res.points[winner] }));
  }
  res.points.forEach((p, side) => {
    if (p < 0) lines.push(t("leftover", { side: sideName(msg, side), p: -p }));
  });
  return lines;
}
