-- Every process caches federation records; last_activity and last_ping are written once a minute per active record
-- and no cache reads them, so an update that sets only those publishes nothing (UPDATE OF: the trigger fires when
-- one of the named columns is in the SET list, https://www.sqlite.org/lang_createtrigger.html).
DROP TRIGGER changes_federations_update;
--> statement-breakpoint
CREATE TRIGGER changes_federations_update AFTER UPDATE OF id, role, remote_cluster_name, remote_ips, callback_hostname, local_cluster_id, remote_cluster_id, remote_federation_id, status, status_reason, declared_as, created_at, created_by, updated_at, psk_enc, remote_ca_pem, peer_kc_issuer_url, peer_kc_jwks_url, peer_broker_client_id, peer_broker_client_secret_urn, local_kc, brokering_enabled, shared_issuer_url, shared_jwks_url, shared_ca_pem, require_peer_jwt, identity_mode, trust_posture, grandfathered, mesh_features ON federations BEGIN INSERT INTO changes (topic, key, at) VALUES ('federations', NEW.id, unixepoch()); INSERT INTO changes (topic, key, at) SELECT 'federations', OLD.id, unixepoch() WHERE OLD.id IS NOT NEW.id; END;
