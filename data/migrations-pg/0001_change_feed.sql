-- PostgreSQL's side of what SQLite does with its own functions and triggers (data/migrations), so the stores' SQL
-- runs unchanged and the change feed (gateway/db/postgres/change-feed.ts) sees every write, whichever node makes it.

-- SQLite's unixepoch(): seconds since the epoch, now (https://www.sqlite.org/lang_datefunc.html).
CREATE FUNCTION unixepoch() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT floor(extract(epoch FROM now()))::bigint $$;
--> statement-breakpoint
-- The highest seq trimmed so far: a reader that saw less than this missed changes it can no longer name (seq has
-- gaps on PostgreSQL, where a rolled-back transaction still consumes sequence values, so the oldest row cannot say).
CREATE TABLE changes_trimmed (one boolean PRIMARY KEY DEFAULT true CHECK (one), upto bigint NOT NULL);
--> statement-breakpoint
INSERT INTO changes_trimmed (upto) VALUES (0);
--> statement-breakpoint
-- Every insert into changes: writers serialise on one transaction-scoped advisory lock and take their seq only then,
-- so seq order is commit order (a reader never passes a seq a slower transaction commits later), and listeners are
-- told (NOTIFY is delivered at commit, https://www.postgresql.org/docs/current/sql-notify.html).
CREATE FUNCTION changes_ordered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('meshgate.changes'));
  NEW.seq := nextval(pg_get_serial_sequence('changes', 'seq'));
  PERFORM pg_notify('meshgate_changes', '');
  RETURN NEW;
END $$;
--> statement-breakpoint
-- The trigger alone numbers rows: a column default would take a second, wasted value per row.
ALTER TABLE changes ALTER COLUMN seq DROP DEFAULT;
--> statement-breakpoint
CREATE TRIGGER changes_ordered BEFORE INSERT ON changes FOR EACH ROW EXECUTE FUNCTION changes_ordered();
--> statement-breakpoint
-- A row's feed key: the named column's text, or a JSON array of several (as SQLite's json_array writes it).
CREATE FUNCTION change_key(r jsonb, columns text[]) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN cardinality(columns) = 1 THEN r ->> columns[1]
    ELSE '[' || (SELECT string_agg((r -> c)::text, ',' ORDER BY i) FROM unnest(columns) WITH ORDINALITY AS u(c, i)) || ']'
  END $$;
--> statement-breakpoint
-- Appends (table, key) for the row written, and the old key too when an update changed it.
CREATE FUNCTION publish_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- TG_ARGV counts from 0; a slice of it counts from 1, as change_key reads it.
  key_columns text[] := TG_ARGV[0:TG_NARGS - 1];
  old_key text;
  new_key text;
BEGIN
  IF TG_OP <> 'INSERT' THEN old_key := change_key(to_jsonb(OLD), key_columns); END IF;
  IF TG_OP <> 'DELETE' THEN new_key := change_key(to_jsonb(NEW), key_columns); END IF;
  IF new_key IS NOT NULL THEN INSERT INTO changes (topic, key, at) VALUES (TG_TABLE_NAME, new_key, unixepoch()); END IF;
  IF old_key IS NOT NULL AND old_key IS DISTINCT FROM new_key THEN
    INSERT INTO changes (topic, key, at) VALUES (TG_TABLE_NAME, old_key, unixepoch());
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER changes_users AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION publish_change('id');
--> statement-breakpoint
CREATE TRIGGER changes_revoked_sessions AFTER INSERT OR UPDATE OR DELETE ON revoked_sessions FOR EACH ROW EXECUTE FUNCTION publish_change('sid');
--> statement-breakpoint
CREATE TRIGGER changes_pats AFTER INSERT OR UPDATE OR DELETE ON pats FOR EACH ROW EXECUTE FUNCTION publish_change('jti');
--> statement-breakpoint
CREATE TRIGGER changes_attribute_schema AFTER INSERT OR UPDATE OR DELETE ON attribute_schema FOR EACH ROW EXECUTE FUNCTION publish_change('name');
--> statement-breakpoint
CREATE TRIGGER changes_authz_tuples AFTER INSERT OR UPDATE OR DELETE ON authz_tuples FOR EACH ROW EXECUTE FUNCTION publish_change('subject_ns', 'subject_id', 'relation', 'object_ns', 'object_id', 'tenant');
--> statement-breakpoint
CREATE TRIGGER changes_federations AFTER INSERT OR UPDATE OR DELETE ON federations FOR EACH ROW EXECUTE FUNCTION publish_change('id');
--> statement-breakpoint
CREATE TRIGGER changes_federation_users AFTER INSERT OR UPDATE OR DELETE ON federation_users FOR EACH ROW EXECUTE FUNCTION publish_change('federation_id', 'external_id');
--> statement-breakpoint
CREATE TRIGGER changes_routing_config AFTER INSERT OR UPDATE OR DELETE ON routing_config FOR EACH ROW EXECUTE FUNCTION publish_change('id');
--> statement-breakpoint
CREATE TRIGGER changes_deployments AFTER INSERT OR UPDATE OR DELETE ON deployments FOR EACH ROW EXECUTE FUNCTION publish_change('id');
--> statement-breakpoint
CREATE TRIGGER changes_execution_gate AFTER INSERT OR UPDATE OR DELETE ON execution_gate FOR EACH ROW EXECUTE FUNCTION publish_change('id');
--> statement-breakpoint
CREATE TRIGGER changes_catalog_containers AFTER INSERT OR UPDATE OR DELETE ON catalog_containers FOR EACH ROW EXECUTE FUNCTION publish_change('urn');
--> statement-breakpoint
CREATE TRIGGER changes_catalog_datasets AFTER INSERT OR UPDATE OR DELETE ON catalog_datasets FOR EACH ROW EXECUTE FUNCTION publish_change('urn');
