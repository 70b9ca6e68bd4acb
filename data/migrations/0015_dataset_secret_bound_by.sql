-- SQLite cannot add a NOT NULL column without a constant default, so the table is rebuilt; an existing
-- binding was authorized against the dataset's creator, who is recorded as its binder.
CREATE TABLE `__new_catalog_dataset_secrets` (
	`dataset_urn` text NOT NULL,
	`reference` text NOT NULL,
	`secret_id` text NOT NULL,
	`bound_by` text NOT NULL,
	PRIMARY KEY(`dataset_urn`, `reference`),
	FOREIGN KEY (`dataset_urn`) REFERENCES `catalog_datasets`(`urn`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_catalog_dataset_secrets` (`dataset_urn`, `reference`, `secret_id`, `bound_by`)
SELECT b.`dataset_urn`, b.`reference`, b.`secret_id`, d.`created_by`
FROM `catalog_dataset_secrets` b JOIN `catalog_datasets` d ON d.`urn` = b.`dataset_urn`;
--> statement-breakpoint
DROP TABLE `catalog_dataset_secrets`;--> statement-breakpoint
ALTER TABLE `__new_catalog_dataset_secrets` RENAME TO `catalog_dataset_secrets`;--> statement-breakpoint
CREATE INDEX `catalog_dataset_secrets_secret` ON `catalog_dataset_secrets` (`secret_id`);
