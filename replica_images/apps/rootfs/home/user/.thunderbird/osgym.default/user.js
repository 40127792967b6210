// apps tier: Thunderbird opens its main window on a local mail folder; no account setup,
// default-client prompt, start page, telemetry notice or "what's new" tab.
// One account of type "none" (Local Folders) with an identity, so the account hub has
// nothing to ask for.
user_pref("mail.accountmanager.accounts", "account1");
user_pref("mail.accountmanager.defaultaccount", "account1");
user_pref("mail.accountmanager.localfoldersserver", "server1");
user_pref("mail.account.account1.server", "server1");
user_pref("mail.account.account1.identities", "id1");
user_pref("mail.identity.id1.fullName", "User");
user_pref("mail.identity.id1.useremail", "user@osgym.invalid");
user_pref("mail.identity.id1.valid", true);
user_pref("mail.server.server1.type", "none");
user_pref("mail.server.server1.hostname", "Local Folders");
user_pref("mail.server.server1.name", "Local Folders");
user_pref("mail.server.server1.userName", "nobody");
user_pref("mail.server.server1.directory-rel", "[ProfD]Mail/Local Folders");
user_pref("mail.provider.enabled", false);
user_pref("mail.provider.suppress_dialog_on_startup", true);
user_pref("mail.shell.checkDefaultClient", false);
user_pref("mail.startup.enabledMailCheckOnce", true);
user_pref("mailnews.start_page.enabled", false);
user_pref("mailnews.start_page_override.mstone", "ignore");
user_pref("mail.rights.version", 1);
user_pref("mail.spotlight.firstRunDone", true);
user_pref("mail.winsearch.firstRunDone", true);
user_pref("mail.inappnotifications.enabled", false);
user_pref("mail.instrumentation.askUser", false);
user_pref("mail.instrumentation.userOptedIn", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("datareporting.policy.dataSubmissionPolicyBypassNotification", true);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.enabled", false);
user_pref("app.update.auto", false);
user_pref("extensions.update.enabled", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("calendar.integration.notify", false);
user_pref("calendar.timezone.useSystemTimezone", true);
user_pref("accessibility.force_disabled", -1);
