export function CallRecords(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
