import type { Campaign } from "../api.ts";
import { governorHold, profileLabel } from "../rules.ts";
import { dayList, narrowerDays, weekText } from "../weekly-hours.ts";

/**
 * The abandon-rate governor's hold on a campaign, said in words (with a mark that does not
 * rely on colour), or nothing when it does not hold it.
 */
export function GovernorStatus({ reason }: { reason: string | undefined }) {
  const hold = governorHold(reason);
  if (hold === undefined) return null;
  return (
    <p class="governor" data-governor>
      <strong>Held by the abandon-rate governor:</strong> {hold}
    </p>
  );
}

/**
 * The campaign's window beside the hours it may really call each weekday under its profile,
 * saying on which days the profile narrows it.
 */
export function EffectiveWindow({
  campaign,
}: {
  campaign: Pick<Campaign, "calling_window" | "effective_calling_window" | "regulatory_profile">;
}) {
  const window = campaign.calling_window;
  const effective = campaign.effective_calling_window;
  const narrower = narrowerDays(window, effective);
  return (
    <section class="window-summary" aria-labelledby="window-summary-title" data-effective-window>
      <h3 id="window-summary-title">Calling window in force</h3>
      <dl class="details narrow-stack">
        <dt>Campaign's window</dt>
        <dd>
          {window.start}–{window.end} every day
        </dd>
        <dt>Effective under {profileLabel(campaign.regulatory_profile)}</dt>
        <dd>{weekText(effective)}</dd>
      </dl>
      <p class="small">
        {narrower.length === 0
          ? "The same as the campaign's window: the profile does not narrow it."
          : `Narrower than the campaign's window on ${dayList(narrower)}: the profile's calling hours cut it.`}{" "}
        <span class="muted">
          As saved, in each lead's local time; a lead's state may narrow it further.
        </span>
      </p>
    </section>
  );
}
