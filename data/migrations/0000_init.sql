CREATE TABLE `pats` (
	`jti` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`name` text,
	`scope` text,
	`aud` text,
	`exp` integer NOT NULL,
	`token_hash` text NOT NULL,
	`tenant_id` text,
	`revoked` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pats_owner` ON `pats` (`owner_id`);--> statement-breakpoint
CREATE TABLE `refresh_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `refresh_tokens_user` ON `refresh_tokens` (`user_id`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`username` text NOT NULL,
	`email` text,
	`password_hash` text,
	`roles` text NOT NULL,
	`attributes` text NOT NULL,
	`source` text DEFAULT 'local' NOT NULL,
	`external_id` text,
	`disabled` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_username_unique` ON `users` (`username`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_external_id_unique` ON `users` (`external_id`);--> statement-breakpoint
CREATE TABLE `authz_tuples` (
	`subject_ns` text NOT NULL,
	`subject_id` text NOT NULL,
	`relation` text NOT NULL,
	`object_ns` text NOT NULL,
	`object_id` text NOT NULL,
	`tenant` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `authz_tuples_unique` ON `authz_tuples` (`subject_ns`,`subject_id`,`object_ns`,`object_id`,`relation`,`tenant`);--> statement-breakpoint
CREATE INDEX `authz_tuples_object` ON `authz_tuples` (`object_ns`,`object_id`,`tenant`);--> statement-breakpoint
CREATE TABLE `routing_config` (
	`id` integer PRIMARY KEY NOT NULL,
	`base_host` text,
	`service_prefixes` text NOT NULL,
	`enabled_services` text NOT NULL,
	`updated_at` text NOT NULL
);
