CREATE TABLE "attribute_schema" (
	"rowid" bigserial NOT NULL,
	"name" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"state" text NOT NULL,
	"authority" text NOT NULL,
	"sensitive" bigint NOT NULL,
	"schema_version" text NOT NULL,
	"declared_at" text NOT NULL,
	"deprecated_at" text,
	"withdrawn_at" text,
	"declared_by" text,
	CONSTRAINT "attribute_schema_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "catalog_containers" (
	"rowid" bigserial NOT NULL,
	"urn" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"platform" text,
	"description" text,
	"tags" text NOT NULL,
	"properties" text NOT NULL,
	"parent_urn" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "catalog_containers_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "catalog_dataset_secrets" (
	"rowid" bigserial NOT NULL,
	"dataset_urn" text NOT NULL,
	"reference" text NOT NULL,
	"secret_id" text NOT NULL,
	"bound_by" text NOT NULL,
	CONSTRAINT "catalog_dataset_secrets_dataset_urn_reference_pk" PRIMARY KEY("dataset_urn","reference"),
	CONSTRAINT "catalog_dataset_secrets_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "catalog_datasets" (
	"rowid" bigserial NOT NULL,
	"urn" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"platform" text NOT NULL,
	"environment" text NOT NULL,
	"description" text,
	"tags" text NOT NULL,
	"properties" text NOT NULL,
	"dataset_schema" text,
	"container_urn" text,
	"writable" bigint DEFAULT 0 NOT NULL,
	"storage" text,
	"content_revision" bigint DEFAULT 0 NOT NULL,
	"created_by" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "catalog_datasets_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "catalog_keks" (
	"rowid" bigserial NOT NULL,
	"version" bigint PRIMARY KEY NOT NULL,
	"state" text NOT NULL,
	"key_check" text NOT NULL,
	"created_at" text NOT NULL,
	"retired_at" text,
	CONSTRAINT "catalog_keks_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "catalog_secrets" (
	"rowid" bigserial NOT NULL,
	"urn" text PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"owner" text NOT NULL,
	"owner_id" text NOT NULL,
	"ciphertext" "bytea" NOT NULL,
	"wrapped_key" "bytea" NOT NULL,
	"kek_version" bigint NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "catalog_secrets_rowid_unique" UNIQUE("rowid"),
	CONSTRAINT "catalog_secrets_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "changes" (
	"rowid" bigserial NOT NULL,
	"seq" bigserial PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"key" text NOT NULL,
	"at" bigint NOT NULL,
	CONSTRAINT "changes_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "cluster_identity" (
	"rowid" bigserial NOT NULL,
	"id" bigint PRIMARY KEY NOT NULL,
	"cluster_id" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "cluster_identity_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "deployments" (
	"rowid" bigserial NOT NULL,
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"upstream" text NOT NULL,
	"strip_prefix" bigint NOT NULL,
	"websocket" bigint NOT NULL,
	"timeout_seconds" double precision,
	"requires_auth" bigint NOT NULL,
	"forward_authorization" bigint NOT NULL,
	"visibility" text DEFAULT 'private' NOT NULL,
	"legacy_port" bigint,
	"created_by" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "deployments_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "execution_gate" (
	"rowid" bigserial NOT NULL,
	"id" bigint PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"config" text NOT NULL,
	"bound_by" text NOT NULL,
	"bound_at" text NOT NULL,
	CONSTRAINT "execution_gate_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "federation_users" (
	"rowid" bigserial NOT NULL,
	"federation_id" text NOT NULL,
	"external_id" text NOT NULL,
	"initial_tuples" text NOT NULL,
	"auto_provisioned" bigint NOT NULL,
	"local_user_id" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	"disabled_at" text,
	CONSTRAINT "federation_users_federation_id_external_id_pk" PRIMARY KEY("federation_id","external_id"),
	CONSTRAINT "federation_users_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "federations" (
	"rowid" bigserial NOT NULL,
	"id" text PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"remote_cluster_name" text NOT NULL,
	"remote_ips" text NOT NULL,
	"callback_hostname" text,
	"local_cluster_id" text NOT NULL,
	"remote_cluster_id" text,
	"remote_federation_id" text,
	"status" text NOT NULL,
	"last_activity" text,
	"last_ping" text,
	"created_at" text NOT NULL,
	"created_by" text,
	"updated_at" text NOT NULL,
	"psk_enc" text,
	"remote_ca_pem" text,
	"peer_kc_issuer_url" text,
	"peer_kc_jwks_url" text,
	"peer_broker_client_id" text,
	"peer_broker_client_secret_urn" text,
	"local_kc" text,
	"brokering_enabled" bigint NOT NULL,
	"shared_issuer_url" text,
	"shared_jwks_url" text,
	"shared_ca_pem" text,
	"require_peer_jwt" bigint,
	"identity_mode" text,
	"trust_posture" text,
	"grandfathered" bigint NOT NULL,
	"mesh_features" text DEFAULT '[]' NOT NULL,
	CONSTRAINT "federations_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "job_shadows" (
	"rowid" bigserial NOT NULL,
	"job_id" text PRIMARY KEY NOT NULL,
	"federation_id" text NOT NULL,
	"cluster_selector" text NOT NULL,
	"user_id" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "job_shadows_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"rowid" bigserial NOT NULL,
	"id" text PRIMARY KEY NOT NULL,
	"runtime" text NOT NULL,
	"runtime_job_id" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"source_cluster_id" text,
	"source_cluster_name" text,
	"user_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"audit_actor" text NOT NULL,
	"cluster_selector" text NOT NULL,
	"entrypoint" text NOT NULL,
	"env_vars" text NOT NULL,
	"user_attrs" text NOT NULL,
	"metadata" text NOT NULL,
	"delegated_access" text,
	"python_packages" text NOT NULL,
	"timeout_seconds" bigint,
	"timed_out" bigint DEFAULT 0 NOT NULL,
	"error_type" text,
	"error_message" text,
	"submitted_at" text NOT NULL,
	"started_at" text,
	"ended_at" text,
	"logs_purged_at" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "jobs_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "mesh_replay" (
	"rowid" bigserial NOT NULL,
	"peer_id" text NOT NULL,
	"nonce" text NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "mesh_replay_peer_id_nonce_pk" PRIMARY KEY("peer_id","nonce"),
	CONSTRAINT "mesh_replay_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "pats" (
	"rowid" bigserial NOT NULL,
	"jti" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"name" text,
	"scope" text,
	"aud" text,
	"exp" bigint NOT NULL,
	"token_hash" text NOT NULL,
	"tenant_id" text,
	"revoked" bigint DEFAULT 0 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "pats_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "peer_nonces" (
	"rowid" bigserial NOT NULL,
	"signature" text PRIMARY KEY NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "peer_nonces_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "refresh_tokens" (
	"rowid" bigserial NOT NULL,
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"expires_at" text NOT NULL,
	"revoked" bigint DEFAULT 0 NOT NULL,
	"created_at" text NOT NULL,
	"family_id" text,
	CONSTRAINT "refresh_tokens_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "retrieval_jobs" (
	"rowid" bigserial NOT NULL,
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"principal" text NOT NULL,
	"dataset_urn" text NOT NULL,
	"dataset" text NOT NULL,
	"transport" text NOT NULL,
	"status" text NOT NULL,
	"request" text NOT NULL,
	"rows" bigint DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"chunks" bigint DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "retrieval_jobs_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "revoked_families" (
	"rowid" bigserial NOT NULL,
	"family_id" text PRIMARY KEY NOT NULL,
	"revoked_at" text NOT NULL,
	CONSTRAINT "revoked_families_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "revoked_sessions" (
	"rowid" bigserial NOT NULL,
	"sid" text PRIMARY KEY NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "revoked_sessions_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "routing_config" (
	"rowid" bigserial NOT NULL,
	"id" bigint PRIMARY KEY NOT NULL,
	"base_host" text,
	"service_prefixes" text NOT NULL,
	"enabled_services" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "routing_config_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "authz_tuples" (
	"rowid" bigserial NOT NULL,
	"subject_ns" text NOT NULL,
	"subject_id" text NOT NULL,
	"relation" text NOT NULL,
	"object_ns" text NOT NULL,
	"object_id" text NOT NULL,
	"tenant" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "authz_tuples_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"rowid" bigserial NOT NULL,
	"id" text PRIMARY KEY NOT NULL,
	"username" text NOT NULL,
	"email" text,
	"password_hash" text,
	"roles" text NOT NULL,
	"attributes" text NOT NULL,
	"source" text DEFAULT 'local' NOT NULL,
	"external_id" text,
	"disabled" bigint DEFAULT 0 NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "users_rowid_unique" UNIQUE("rowid"),
	CONSTRAINT "users_username_unique" UNIQUE("username"),
	CONSTRAINT "users_external_id_unique" UNIQUE("external_id")
);
--> statement-breakpoint
ALTER TABLE "catalog_dataset_secrets" ADD CONSTRAINT "catalog_dataset_secrets_dataset_urn_catalog_datasets_urn_fk" FOREIGN KEY ("dataset_urn") REFERENCES "public"."catalog_datasets"("urn") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "federation_users" ADD CONSTRAINT "federation_users_federation_id_federations_id_fk" FOREIGN KEY ("federation_id") REFERENCES "public"."federations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pats" ADD CONSTRAINT "pats_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "catalog_containers_parent" ON "catalog_containers" USING btree ("parent_urn");--> statement-breakpoint
CREATE INDEX "catalog_dataset_secrets_secret" ON "catalog_dataset_secrets" USING btree ("secret_id");--> statement-breakpoint
CREATE INDEX "catalog_datasets_container" ON "catalog_datasets" USING btree ("container_urn","urn");--> statement-breakpoint
CREATE INDEX "catalog_secrets_kek" ON "catalog_secrets" USING btree ("kek_version");--> statement-breakpoint
CREATE INDEX "catalog_secrets_owner" ON "catalog_secrets" USING btree ("owner_id");--> statement-breakpoint
CREATE UNIQUE INDEX "deployments_kind_name" ON "deployments" USING btree ("kind","name");--> statement-breakpoint
CREATE UNIQUE INDEX "deployments_legacy_port" ON "deployments" USING btree ("legacy_port");--> statement-breakpoint
CREATE INDEX "federations_status" ON "federations" USING btree ("status");--> statement-breakpoint
CREATE INDEX "federations_remote_cluster" ON "federations" USING btree ("remote_cluster_id");--> statement-breakpoint
CREATE INDEX "jobs_user_submitted" ON "jobs" USING btree ("user_id","submitted_at");--> statement-breakpoint
CREATE INDEX "jobs_status" ON "jobs" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_runtime_job_id" ON "jobs" USING btree ("runtime_job_id");--> statement-breakpoint
CREATE INDEX "mesh_replay_expiry" ON "mesh_replay" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "pats_owner" ON "pats" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "peer_nonces_expiry" ON "peer_nonces" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "refresh_tokens_user" ON "refresh_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "refresh_tokens_family" ON "refresh_tokens" USING btree ("family_id");--> statement-breakpoint
CREATE INDEX "retrieval_jobs_owner" ON "retrieval_jobs" USING btree ("owner_id","created_at");--> statement-breakpoint
CREATE INDEX "retrieval_jobs_created" ON "retrieval_jobs" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "authz_tuples_unique" ON "authz_tuples" USING btree ("subject_ns","subject_id","object_ns","object_id","relation","tenant");--> statement-breakpoint
CREATE INDEX "authz_tuples_object" ON "authz_tuples" USING btree ("object_ns","object_id","tenant");