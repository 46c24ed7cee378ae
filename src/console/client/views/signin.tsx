import { home } from "../access.ts";
import { api } from "../api.ts";
import { facts } from "../facts.ts";
import { navigate, search } from "../router.ts";
import { refreshMe, session, sessionEnded, signedIn, signOut } from "../session.ts";
import { Field, Problem, useAction } from "../ui.tsx";

function nextPage(): string {
  const next = new URLSearchParams(search.value).get("next");
  return next?.startsWith("/") && !next.startsWith("//") && next !== "/signin" ? next : home();
}

function ChangePassword() {
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const element = event.target as HTMLFormElement;
    const form = new FormData(element);
    const next = String(form.get("new_password"));
    const mismatch =
      next === String(form.get("repeat"))
        ? undefined
        : { field: "repeat", message: "must be the same as the new password" };
    const done = await action.submit(
      element,
      () =>
        api.changePassword({
          current_password: String(form.get("current_password")),
          new_password: next,
        }),
      [mismatch],
    );
    // The session's user changes, and the page moves on by itself.
    if (done) await refreshMe();
  };
  return (
    <form
      class="card narrow"
      onSubmit={submit}
      {...action.checks}
      noValidate
      aria-labelledby="change-title"
    >
      <h1 id="change-title">Choose a new password</h1>
      <p>Your account was given a first password: choose your own before you go on.</p>
      <input
        type="email"
        name="username"
        autoComplete="username"
        value={session.value?.user.email}
        hidden
        readOnly
      />
      <Field
        label="Current password"
        name="current_password"
        type="password"
        autoComplete="current-password"
        {...facts.inputLimits.password.current_password}
        required
        error={action.field("current_password")}
      />
      <Field
        label="New password"
        name="new_password"
        type="password"
        autoComplete="new-password"
        {...facts.inputLimits.password.new_password}
        required
        hint="12 to 256 characters"
        error={action.field("new_password")}
      />
      <Field
        label="Repeat new password"
        name="repeat"
        type="password"
        autoComplete="new-password"
        required
        error={action.field("repeat")}
      />
      <button type="submit" class="primary" disabled={action.busy}>
        Change password
      </button>
      <Problem error={action.error} />
      <button type="button" class="link" onClick={() => signOut()}>
        Sign out
      </button>
    </form>
  );
}

export function SignIn() {
  const action = useAction();
  const current = session.value;
  if (current?.user.must_change_password)
    return (
      <main id="main">
        <ChangePassword />
      </main>
    );
  if (current) {
    queueMicrotask(() => navigate(nextPage(), true));
    return null;
  }
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const workspace = String(form.get("tenant_domain") ?? "").trim();
    const login = await action.submit(event.target as HTMLFormElement, () =>
      api.login({
        email: String(form.get("email")),
        password: String(form.get("password")),
        ...(workspace ? { tenant_domain: workspace } : {}),
      }),
    );
    if (!login) return;
    // Signed in, this page moves on by itself to where the user was going.
    signedIn(login);
    if (!login.user.must_change_password) await refreshMe().catch(() => {});
  };
  return (
    <main id="main">
      <form
        class="card narrow"
        onSubmit={submit}
        {...action.checks}
        noValidate
        aria-labelledby="signin-title"
      >
        <p class="product">
          <strong>Dialer engine</strong>: the outbound dialer for contact centers: campaigns, lead
          lists, agents and their calls.
        </p>
        <h1 id="signin-title">Sign in</h1>
        {sessionEnded.value && (
          <p class="notice" role="status">
            Your session ended: sign in again to go on.
          </p>
        )}
        <Field
          label="E-mail"
          name="email"
          type="email"
          autoComplete="username"
          required
          error={action.field("email")}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          error={action.field("password")}
        />
        <Field
          label="Workspace"
          name="tenant_domain"
          autoComplete="organization"
          hint="Your workspace's domain; leave empty if you have one workspace"
        />
        <button type="submit" class="primary" disabled={action.busy}>
          Sign in
        </button>
        <Problem error={action.error} />
      </form>
    </main>
  );
}
