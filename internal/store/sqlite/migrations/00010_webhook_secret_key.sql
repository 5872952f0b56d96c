-- Webhook secrets at rest: with RISKAPI_SECRET_KEY set, secret holds the base64 of an
-- AES-256-GCM nonce, ciphertext and tag, and secret_key_id the id of the key that encrypted it
-- (so keys can be rotated: `riskapi secrets rotate`). '' marks a secret stored in plaintext,
-- as every secret was before this migration.

-- +goose Up
ALTER TABLE webhook_endpoints ADD COLUMN secret_key_id TEXT NOT NULL DEFAULT '';

-- +goose Down
-- Only for a store whose secrets are all in plaintext: encrypted ones would be left unreadable.
ALTER TABLE webhook_endpoints DROP COLUMN secret_key_id;
