export function DoNotCall(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
