-- Writes to federations wait until the migrating transaction ends (drizzle runs the pending migrations in one; SHARE
-- ROW EXCLUSIVE conflicts with every write and with itself, https://www.postgresql.org/docs/current/explicit-locking.html),
-- so no apply on a node still running makes a duplicate between this cleanup and the unique index that follows.
LOCK TABLE federations IN SHARE ROW EXCLUSIVE MODE;--> statement-breakpoint
-- Before a declared peer's live record is made unique (federations_declared_live): where concurrent applies made
-- several, the one to keep is the PAIRED one, else the first made. The others are not left live: two receivers made
-- from one declared peer share its PSK, and a WAITING pair would answer every correctly signed pair call
-- psk_ambiguous. Each that is not PAIRED is ended (DISCONNECTED, status_reason declared_duplicate, declared_as kept,
-- nothing deleted): it is no longer live, so the index allows it beside the one kept.
UPDATE federations SET status = 'DISCONNECTED', status_reason = 'declared_duplicate'
WHERE declared_as IS NOT NULL AND status IN ('WAITING', 'PAIRING') AND EXISTS (
  SELECT 1 FROM federations AS kept
  WHERE kept.declared_as = federations.declared_as AND kept.status IN ('WAITING', 'PAIRING', 'PAIRED') AND kept.id <> federations.id
    AND (
      kept.status = 'PAIRED'
      OR kept.created_at < federations.created_at OR (kept.created_at = federations.created_at AND kept.id < federations.id)
    )
);--> statement-breakpoint
-- A PAIRED one beside the PAIRED one kept is a working pairing of its own: it stays PAIRED as a record made by hand
-- (declared_as cleared), marked declared_duplicate so the gateway names it at start (upkeep.ts) for the operator to
-- delete one of the two.
UPDATE federations SET declared_as = NULL, status_reason = 'declared_duplicate'
WHERE declared_as IS NOT NULL AND status = 'PAIRED' AND EXISTS (
  SELECT 1 FROM federations AS kept
  WHERE kept.declared_as = federations.declared_as AND kept.status = 'PAIRED' AND kept.id <> federations.id
    AND (kept.created_at < federations.created_at OR (kept.created_at = federations.created_at AND kept.id < federations.id))
);
