import { isRole, PLANS, ROLES } from '../../common/roles.js';
import { VersionTable } from '../../versioning/api-versions.js';
import { command, int, need, optUuid, ORG, plan, USER, UsageError, uuid } from '../command-spec.js';

/** Orgs, users, memberships, workspaces and development sessions. */
export const DIRECTORY_COMMANDS = {
  'org create': command({
    summary: 'Create an org.',
    flags: {
      name: { value: '<name>', help: 'Its name, at most 200 characters.', required: true },
      plan: { value: PLANS.join('|'), help: 'Its plan (default free).' },
    },
    prints: '{"id","name","plan"}',
    args: (f) => {
      const name = need(f, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return { name, plan: plan(f, 'free') };
    },
    run: (s, a) => s.createOrg(a.name, a.plan),
  }),
  'org set-plan': command({
    summary: "Change an org's plan.",
    flags: { org: ORG(), plan: { value: PLANS.join('|'), help: 'The new plan.', required: true } },
    prints: '{"id","name","plan"}',
    args: (f) => ({ org: uuid(f, 'org'), plan: plan(f) }),
    run: (s, a) => s.setPlan(a.org, a.plan),
  }),
  'org set-version': command({
    summary: 'Pin an org to a dated API version (answers to requests without an Api-Version header).',
    flags: {
      org: ORG(),
      version: {
        value: '<YYYY-MM-DD>',
        help: `A supported API version: ${new VersionTable().supported(new Date()).join(', ')}.`,
        required: true,
      },
    },
    prints: '{"id","name","plan","api_version"}',
    args: (f) => {
      const version = need(f, 'version');
      const table = new VersionTable();
      const refusal = table.refusal(version, new Date());
      if (refusal)
        throw new UsageError(
          `--version ${table.refusalMessage(version, refusal, new Date()).replace(/^Api-Version header /, '')}`,
        );
      return { org: uuid(f, 'org'), version };
    },
    run: (s, a) => s.setApiVersion(a.org, a.version),
  }),
  'user create': command({
    summary: 'Create a user.',
    flags: {
      email: { value: '<email>', help: 'E-mail address, unique regardless of case.', required: true },
      id: { value: '<uuid>', help: "The user's id, e.g. from your identity provider (default: a new UUID)." },
    },
    prints: '{"id","email"}',
    args: (f) => {
      const email = need(f, 'email');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320)
        throw new UsageError(`--email must be an e-mail address, got "${email}"`);
      return { email, id: optUuid(f, 'id') };
    },
    run: (s, a) => s.createUser(a.email, a.id),
  }),
  'member add': command({
    summary: 'Add a user to an org with a role; adding again changes the role.',
    flags: {
      org: ORG(),
      user: USER(),
      role: { value: ROLES.join('|'), help: 'Role in the org (viewer: read only).', required: true },
    },
    prints: '{"org_id","user_id","role"}',
    args: (f) => {
      const role = need(f, 'role');
      if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}, got "${role}"`);
      return { org: uuid(f, 'org'), user: uuid(f, 'user'), role };
    },
    run: (s, a) => s.addMember(a.org, a.user, a.role),
  }),
  'member remove': command({
    summary: 'Remove a user from an org (their keys in it stop verifying).',
    flags: { org: ORG(), user: USER() },
    prints: '{"org_id","user_id","role","removed":true}',
    args: (f) => ({ org: uuid(f, 'org'), user: uuid(f, 'user') }),
    run: (s, a) => s.removeMember(a.org, a.user),
  }),
  'workspace create': command({
    summary: 'Record that a member connected a repository in an org (mint needs it). Idempotent.',
    flags: { org: ORG(), user: USER('A member of the org (a UUID).') },
    prints: '{"id","org_id","user_id"}',
    args: (f) => ({ org: uuid(f, 'org'), user: uuid(f, 'user') }),
    run: (s, a) => s.createWorkspace(a.org, a.user),
  }),
  session: command({
    summary: 'Sign a development session JWT for a user with SESSION_JWT_SECRET.',
    flags: {
      user: USER(),
      org: { value: '<org-id>', help: 'The org the session operates in (the user must be a member).' },
      ttl: { value: '<seconds>', help: 'Lifetime, 1 to 31536000 seconds (default 3600).' },
    },
    prints: '{"token"}',
    args: (f) => ({ user: uuid(f, 'user'), org: optUuid(f, 'org'), ttl: int(f, 'ttl', 3600, 1, 31_536_000) }),
    run: (s, a) => s.session(a.user, a.org, a.ttl),
  }),
};
