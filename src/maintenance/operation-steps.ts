/**
 * One step an operator operation reached (decision 0023): a real event of the run, never a timer. `done` and
 * `total` count the step's units (pages, records, migrations) where the operation knows them; `fields` carries
 * the operation's own values (counts, names, outcomes). No fact text, no path, no record id.
 */
export interface OperationStep {
  readonly step: string;
  readonly done?: number;
  readonly total?: number;
  readonly fields?: Readonly<Record<string, string | number | null>>;
}

/** Receives each step as the operation reaches it; it must not throw (it only reports). */
export type StepListener = (step: OperationStep) => void;

/** The listener that drops every step, for callers that pass none. */
export const IGNORE_STEPS: StepListener = () => {};
