-- The list of simulations shows each without its per-node array (up to 100,000 entries):
-- summary is the finished object without nodes, the copy its event carries; empty until the
-- simulation finishes (an unfinished simulation has no nodes, and the list shows its payload).

-- +goose Up
ALTER TABLE cascade_simulations ADD COLUMN summary BLOB    NOT NULL DEFAULT X'';

-- +goose Down
ALTER TABLE cascade_simulations DROP COLUMN summary;
