CREATE TABLE `cluster_identity` (
	`id` integer PRIMARY KEY NOT NULL,
	`cluster_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `federation_users` (
	`federation_id` text NOT NULL,
	`external_id` text NOT NULL,
	`initial_tuples` text NOT NULL,
	`auto_provisioned` integer NOT NULL,
	`local_user_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`disabled_at` text,
	PRIMARY KEY(`federation_id`, `external_id`),
	FOREIGN KEY (`federation_id`) REFERENCES `federations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `federations` (
	`id` text PRIMARY KEY NOT NULL,
	`role` text NOT NULL,
	`remote_cluster_name` text NOT NULL,
	`remote_ips` text NOT NULL,
	`callback_hostname` text,
	`local_cluster_id` text NOT NULL,
	`remote_cluster_id` text,
	`status` text NOT NULL,
	`last_activity` text,
	`last_ping` text,
	`created_at` text NOT NULL,
	`created_by` text,
	`updated_at` text NOT NULL,
	`psk_enc` text,
	`remote_ca_pem` text,
	`peer_kc_issuer_url` text,
	`peer_kc_jwks_url` text,
	`peer_broker_client_id` text,
	`peer_broker_client_secret_urn` text,
	`local_kc` text,
	`brokering_enabled` integer NOT NULL,
	`shared_issuer_url` text,
	`shared_jwks_url` text,
	`shared_ca_pem` text,
	`require_peer_jwt` integer,
	`identity_mode` text,
	`trust_posture` text,
	`grandfathered` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `federations_status` ON `federations` (`status`);--> statement-breakpoint
CREATE INDEX `federations_remote_cluster` ON `federations` (`remote_cluster_id`);--> statement-breakpoint
CREATE TABLE `peer_nonces` (
	`signature` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `peer_nonces_expiry` ON `peer_nonces` (`expires_at`);