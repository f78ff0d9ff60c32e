// The body both reference servers answer: the size and shape of a GET /me response.
export const ME_BODY = {
  user_id: '6f1c1f57-3b8e-4f44-9d7e-1b2a3c4d5e6f',
  org_id: '0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d',
  email: 'bench@example.com',
  scopes: ['decisions:read'],
  org_role: 'owner',
  org_member_count: 1,
};
