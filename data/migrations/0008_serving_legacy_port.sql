ALTER TABLE `deployments` ADD `legacy_port` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `deployments_legacy_port` ON `deployments` (`legacy_port`);