export function AdminUsers(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function AdminApiKeys(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function AdminEdgeNodes(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function AdminSettings(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
export function Tenants(_props: Record<string, string>) {
  return <p>Coming soon</p>;
}
