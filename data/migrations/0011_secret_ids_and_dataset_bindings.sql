CREATE TABLE `catalog_dataset_secrets` (
	`dataset_urn` text NOT NULL,
	`reference` text NOT NULL,
	`secret_id` text NOT NULL,
	PRIMARY KEY(`dataset_urn`, `reference`),
	FOREIGN KEY (`dataset_urn`) REFERENCES `catalog_datasets`(`urn`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `catalog_dataset_secrets_secret` ON `catalog_dataset_secrets` (`secret_id`);--> statement-breakpoint
-- SQLite cannot add a NOT NULL column without a constant default, so the table is rebuilt;
-- every existing secret gets its own random (version 4) UUID.
CREATE TABLE `__new_catalog_secrets` (
	`urn` text PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
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
INSERT INTO `__new_catalog_secrets`
	(`urn`, `id`, `name`, `description`, `owner`, `owner_id`, `ciphertext`, `wrapped_key`, `kek_version`, `created_at`, `updated_at`)
SELECT `urn`,
	lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
		substr('89ab', 1 + abs(random()) % 4, 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
	`name`, `description`, `owner`, `owner_id`, `ciphertext`, `wrapped_key`, `kek_version`, `created_at`, `updated_at`
FROM `catalog_secrets`;
--> statement-breakpoint
DROP TABLE `catalog_secrets`;--> statement-breakpoint
ALTER TABLE `__new_catalog_secrets` RENAME TO `catalog_secrets`;--> statement-breakpoint
CREATE INDEX `catalog_secrets_kek` ON `catalog_secrets` (`kek_version`);--> statement-breakpoint
CREATE INDEX `catalog_secrets_owner` ON `catalog_secrets` (`owner_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `catalog_secrets_id_unique` ON `catalog_secrets` (`id`);--> statement-breakpoint
-- Bind the references existing datasets hold (secret URNs at any depth of `properties`) to the secrets
-- those URNs name now. A reference to an absent secret gets no binding: using it answers secret_unavailable.
INSERT INTO `catalog_dataset_secrets` (`dataset_urn`, `reference`, `secret_id`)
SELECT DISTINCT d.`urn`, t.`value`, s.`id`
FROM `catalog_datasets` d, json_tree(d.`properties`) t
JOIN `catalog_secrets` s ON s.`urn` = t.`value`
WHERE t.`type` = 'text' AND substr(t.`value`, 1, 21) = 'urn:li:dataHubSecret:';
