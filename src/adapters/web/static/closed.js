// Issue #30: why a question was closed without an answer, for people — the history's
// closed_reason and a late answer's Clarion-Closed-Reason header (the CLI's wording too).

const WHY = {
  superseded: "the agent moved on to a newer turn",
  session_ended: "the session ended",
  expired: "it expired",
  cancelled: "it was cancelled",
};

/** The human reason for `reason` (the raw value when this page does not know it). */
export function closedWhy(reason) {
  return WHY[reason] ?? reason;
}
