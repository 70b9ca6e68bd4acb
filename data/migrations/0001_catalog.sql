CREATE TABLE `catalog_containers` (
	`urn` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`platform` text,
	`description` text,
	`tags` text NOT NULL,
	`properties` text NOT NULL,
	`parent_urn` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `catalog_containers_parent` ON `catalog_containers` (`parent_urn`);--> statement-breakpoint
CREATE TABLE `catalog_datasets` (
	`urn` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`platform` text NOT NULL,
	`environment` text NOT NULL,
	`description` text,
	`tags` text NOT NULL,
	`properties` text NOT NULL,
	`dataset_schema` text,
	`container_urn` text,
	`writable` integer DEFAULT false NOT NULL,
	`storage` text,
	`content_revision` integer DEFAULT 0 NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `catalog_datasets_container` ON `catalog_datasets` (`container_urn`,`urn`);--> statement-breakpoint
CREATE TABLE `catalog_keks` (
	`version` integer PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`key_check` text NOT NULL,
	`created_at` text NOT NULL,
	`retired_at` text
);
--> statement-breakpoint
CREATE TABLE `catalog_secrets` (
	`urn` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`owner` text NOT NULL,
	`owner_id` text NOT NULL,
	`ciphertext` blob NOT NULL,
	`wrapped_key` blob NOT NULL,
	`kek_version` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `catalog_secrets_kek` ON `catalog_secrets` (`kek_version`);--> statement-breakpoint
CREATE INDEX `catalog_secrets_owner` ON `catalog_secrets` (`owner_id`);