-- Every write to a table a process-local cache depends on appends (topic, key) to `changes` in the same
-- transaction, whichever connection makes it (a gateway process or the meshgate CLI): gateway/db/change-feed.ts.
CREATE TRIGGER changes_users_insert AFTER INSERT ON users BEGIN INSERT INTO changes (topic, key, at) VALUES ('users', NEW.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_users_update AFTER UPDATE ON users BEGIN INSERT INTO changes (topic, key, at) VALUES ('users', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'users', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
--> statement-breakpoint
CREATE TRIGGER changes_users_delete AFTER DELETE ON users BEGIN INSERT INTO changes (topic, key, at) VALUES ('users', OLD.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_revoked_sessions_insert AFTER INSERT ON revoked_sessions BEGIN INSERT INTO changes (topic, key, at) VALUES ('revoked_sessions', NEW.sid, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_revoked_sessions_update AFTER UPDATE ON revoked_sessions BEGIN INSERT INTO changes (topic, key, at) VALUES ('revoked_sessions', NEW.sid, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'revoked_sessions', OLD.sid, unixepoch() WHERE OLD.sid IS NOT NEW.sid; END;
--> statement-breakpoint
CREATE TRIGGER changes_revoked_sessions_delete AFTER DELETE ON revoked_sessions BEGIN INSERT INTO changes (topic, key, at) VALUES ('revoked_sessions', OLD.sid, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_pats_insert AFTER INSERT ON pats BEGIN INSERT INTO changes (topic, key, at) VALUES ('pats', NEW.jti, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_pats_update AFTER UPDATE ON pats BEGIN INSERT INTO changes (topic, key, at) VALUES ('pats', NEW.jti, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'pats', OLD.jti, unixepoch() WHERE OLD.jti IS NOT NEW.jti; END;
--> statement-breakpoint
CREATE TRIGGER changes_pats_delete AFTER DELETE ON pats BEGIN INSERT INTO changes (topic, key, at) VALUES ('pats', OLD.jti, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_attribute_schema_insert AFTER INSERT ON attribute_schema BEGIN INSERT INTO changes (topic, key, at) VALUES ('attribute_schema', NEW.name, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_attribute_schema_update AFTER UPDATE ON attribute_schema BEGIN INSERT INTO changes (topic, key, at) VALUES ('attribute_schema', NEW.name, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'attribute_schema', OLD.name, unixepoch() WHERE OLD.name IS NOT NEW.name; END;
--> statement-breakpoint
CREATE TRIGGER changes_attribute_schema_delete AFTER DELETE ON attribute_schema BEGIN INSERT INTO changes (topic, key, at) VALUES ('attribute_schema', OLD.name, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_authz_tuples_insert AFTER INSERT ON authz_tuples BEGIN INSERT INTO changes (topic, key, at) VALUES ('authz_tuples', json_array(NEW.subject_ns, NEW.subject_id, NEW.relation, NEW.object_ns, NEW.object_id, NEW.tenant), unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_authz_tuples_update AFTER UPDATE ON authz_tuples BEGIN INSERT INTO changes (topic, key, at) VALUES ('authz_tuples', json_array(NEW.subject_ns, NEW.subject_id, NEW.relation, NEW.object_ns, NEW.object_id, NEW.tenant), unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'authz_tuples', json_array(OLD.subject_ns, OLD.subject_id, OLD.relation, OLD.object_ns, OLD.object_id, OLD.tenant), unixepoch() WHERE json_array(OLD.subject_ns, OLD.subject_id, OLD.relation, OLD.object_ns, OLD.object_id, OLD.tenant) IS NOT json_array(NEW.subject_ns, NEW.subject_id, NEW.relation, NEW.object_ns, NEW.object_id, NEW.tenant); END;
--> statement-breakpoint
CREATE TRIGGER changes_authz_tuples_delete AFTER DELETE ON authz_tuples BEGIN INSERT INTO changes (topic, key, at) VALUES ('authz_tuples', json_array(OLD.subject_ns, OLD.subject_id, OLD.relation, OLD.object_ns, OLD.object_id, OLD.tenant), unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_federations_insert AFTER INSERT ON federations BEGIN INSERT INTO changes (topic, key, at) VALUES ('federations', NEW.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_federations_update AFTER UPDATE ON federations BEGIN INSERT INTO changes (topic, key, at) VALUES ('federations', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'federations', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
--> statement-breakpoint
CREATE TRIGGER changes_federations_delete AFTER DELETE ON federations BEGIN INSERT INTO changes (topic, key, at) VALUES ('federations', OLD.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_federation_users_insert AFTER INSERT ON federation_users BEGIN INSERT INTO changes (topic, key, at) VALUES ('federation_users', json_array(NEW.federation_id, NEW.external_id), unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_federation_users_update AFTER UPDATE ON federation_users BEGIN INSERT INTO changes (topic, key, at) VALUES ('federation_users', json_array(NEW.federation_id, NEW.external_id), unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'federation_users', json_array(OLD.federation_id, OLD.external_id), unixepoch() WHERE json_array(OLD.federation_id, OLD.external_id) IS NOT json_array(NEW.federation_id, NEW.external_id); END;
--> statement-breakpoint
CREATE TRIGGER changes_federation_users_delete AFTER DELETE ON federation_users BEGIN INSERT INTO changes (topic, key, at) VALUES ('federation_users', json_array(OLD.federation_id, OLD.external_id), unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_routing_config_insert AFTER INSERT ON routing_config BEGIN INSERT INTO changes (topic, key, at) VALUES ('routing_config', NEW.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_routing_config_update AFTER UPDATE ON routing_config BEGIN INSERT INTO changes (topic, key, at) VALUES ('routing_config', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'routing_config', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
--> statement-breakpoint
CREATE TRIGGER changes_routing_config_delete AFTER DELETE ON routing_config BEGIN INSERT INTO changes (topic, key, at) VALUES ('routing_config', OLD.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_deployments_insert AFTER INSERT ON deployments BEGIN INSERT INTO changes (topic, key, at) VALUES ('deployments', NEW.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_deployments_update AFTER UPDATE ON deployments BEGIN INSERT INTO changes (topic, key, at) VALUES ('deployments', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'deployments', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
--> statement-breakpoint
CREATE TRIGGER changes_deployments_delete AFTER DELETE ON deployments BEGIN INSERT INTO changes (topic, key, at) VALUES ('deployments', OLD.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_execution_gate_insert AFTER INSERT ON execution_gate BEGIN INSERT INTO changes (topic, key, at) VALUES ('execution_gate', NEW.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_execution_gate_update AFTER UPDATE ON execution_gate BEGIN INSERT INTO changes (topic, key, at) VALUES ('execution_gate', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'execution_gate', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
--> statement-breakpoint
CREATE TRIGGER changes_execution_gate_delete AFTER DELETE ON execution_gate BEGIN INSERT INTO changes (topic, key, at) VALUES ('execution_gate', OLD.id, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_containers_insert AFTER INSERT ON catalog_containers BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_containers', NEW.urn, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_containers_update AFTER UPDATE ON catalog_containers BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_containers', NEW.urn, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'catalog_containers', OLD.urn, unixepoch() WHERE OLD.urn IS NOT NEW.urn; END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_containers_delete AFTER DELETE ON catalog_containers BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_containers', OLD.urn, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_datasets_insert AFTER INSERT ON catalog_datasets BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_datasets', NEW.urn, unixepoch()); END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_datasets_update AFTER UPDATE ON catalog_datasets BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_datasets', NEW.urn, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'catalog_datasets', OLD.urn, unixepoch() WHERE OLD.urn IS NOT NEW.urn; END;
--> statement-breakpoint
CREATE TRIGGER changes_catalog_datasets_delete AFTER DELETE ON catalog_datasets BEGIN INSERT INTO changes (topic, key, at) VALUES ('catalog_datasets', OLD.urn, unixepoch()); END;
