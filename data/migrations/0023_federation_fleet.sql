ALTER TABLE `cluster_identity` ADD `default_name` text;--> statement-breakpoint
ALTER TABLE `federations` ADD `status_reason` text;--> statement-breakpoint
ALTER TABLE `federations` ADD `declared_as` text;