import type { ConsoleFacts } from "../facts.ts";

declare const CONSOLE_FACTS: ConsoleFacts;

/** The domain's states, actions and levels, compiled in from the shared schemas (see ../facts.ts). */
export const facts: ConsoleFacts = CONSOLE_FACTS;
