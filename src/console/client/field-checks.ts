import type { FieldError } from "./api.ts";

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

const plural = (count: number, one: string) => `${count} ${one}${count === 1 ? "" : "s"}`;

/**
 * The browser's own verdict on a field, under the limits the API's schemas gave it (see
 * ../input-limits.ts), said in the API's words.
 */
export function failureOf(control: Control): string | undefined {
  const validity = control.validity;
  if (validity.valid) return undefined;
  if (validity.valueMissing) return "is required";
  if (validity.badInput) return control.type === "number" ? "must be a number" : "is not valid";
  if (validity.typeMismatch)
    return control.type === "email" ? "must be an e-mail address" : "must be a URL";
  if (control instanceof HTMLInputElement) {
    if (validity.rangeUnderflow) return `must be at least ${control.min}`;
    if (validity.rangeOverflow) return `must be at most ${control.max}`;
    if (validity.stepMismatch)
      return control.step === "1"
        ? "must be a whole number"
        : `must be a multiple of ${control.step}`;
    if (validity.tooShort) return `must be at least ${plural(control.minLength, "character")}`;
    if (validity.tooLong) return `must be at most ${plural(control.maxLength, "character")}`;
    if (validity.patternMismatch) return control.title || "is not in the form this field takes";
  }
  return "is not a value this field takes";
}

/** A form's field with a name: what the API would be sent. */
export const isNamedControl = (target: unknown): target is Control =>
  (target instanceof HTMLInputElement ||
    target instanceof HTMLSelectElement ||
    target instanceof HTMLTextAreaElement) &&
  target.name !== "";

const controlsOf = (form: HTMLFormElement) =>
  [...form.elements].filter(
    (element): element is Control => isNamedControl(element) && element.willValidate,
  );

/** Every field of the form the API would refuse, by its name, all at once. */
export function formFailures(form: HTMLFormElement): FieldError[] {
  const failures: FieldError[] = [];
  for (const control of controlsOf(form)) {
    const message = failureOf(control);
    if (message) failures.push({ field: control.name, message });
  }
  return failures;
}

/** The field a failure names, to be focused so that the keyboard lands on what to change. */
export function focusField(form: HTMLFormElement, field: string) {
  controlsOf(form)
    .find((control) => control.name === field)
    ?.focus();
}
