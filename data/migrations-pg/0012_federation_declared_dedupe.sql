-- Before a declared peer's live record is made unique (federations_declared_live): where concurrent applies made
-- several, the one to keep is the PAIRED one, else the first made; the others become records made by hand (declared_as
-- cleared), so every pairing keeps working and the declared set manages exactly one.
UPDATE federations SET declared_as = NULL
WHERE declared_as IS NOT NULL AND status IN ('WAITING', 'PAIRING', 'PAIRED') AND EXISTS (
  SELECT 1 FROM federations AS kept
  WHERE kept.declared_as = federations.declared_as AND kept.status IN ('WAITING', 'PAIRING', 'PAIRED') AND kept.id <> federations.id
    AND (
      (kept.status = 'PAIRED' AND federations.status <> 'PAIRED')
      OR ((kept.status = 'PAIRED') = (federations.status = 'PAIRED')
        AND (kept.created_at < federations.created_at OR (kept.created_at = federations.created_at AND kept.id < federations.id)))
    )
);
