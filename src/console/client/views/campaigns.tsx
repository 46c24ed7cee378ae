export function CampaignList(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function CampaignNew(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function CampaignDetail(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
