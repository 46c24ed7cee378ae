export function LeadListView(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
